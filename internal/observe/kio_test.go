package observe

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// unmarshalChunk is how a document was read before kio: yaml.v3 on the
// chunk the shared splitter gives, lines shifted to the input's. It is the
// oracle the kio reading is compared with.
func unmarshalChunk(chunk []byte, startLine int) (*yaml.Node, int, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(chunk, &n); err != nil {
		line := startLine
		msg := yamlErrLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
			k, _ := strconv.Atoi(m[len("line "):])
			line = k + startLine - 1
			return "line " + strconv.Itoa(line)
		})
		return nil, line, errors.New(msg)
	}
	shiftLines(&n, startLine-1)
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return n.Content[0], n.Content[0].Line, nil
	}
	return nil, startLine, errors.New("empty document")
}

// sameNode compares what the parsers read from a node tree: kind, tag,
// value, style, anchor, place and children. A null document is compared by
// kind, tag and line: kio drops it, and the reader stands a null in for it.
func sameNode(a, b *yaml.Node, path string) error {
	if a.Kind != b.Kind || a.Tag != b.Tag || a.Line != b.Line {
		return fmt.Errorf("%s: %v %s line %d, want %v %s line %d", path, b.Kind, b.Tag, b.Line, a.Kind, a.Tag, a.Line)
	}
	if path == "" && a.Kind == yaml.ScalarNode && a.Tag == "!!null" {
		return nil
	}
	if a.Value != b.Value || a.Style != b.Style || a.Anchor != b.Anchor || a.Column != b.Column || len(a.Content) != len(b.Content) {
		return fmt.Errorf("%s: %q style %v anchor %q column %d (%d children), want %q style %v anchor %q column %d (%d children)", path,
			b.Value, b.Style, b.Anchor, b.Column, len(b.Content), a.Value, a.Style, a.Anchor, a.Column, len(a.Content))
	}
	if (a.Alias == nil) != (b.Alias == nil) {
		return fmt.Errorf("%s: alias differs", path)
	}
	for i := range a.Content {
		if err := sameNode(a.Content[i], b.Content[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// nonMarker finds a line inside a document that starts with `---` but is no
// marker: YAML reads it as content, kio as a separator.
var nonMarker = regexp.MustCompile(`\n---[^ \t\n]`)

// compareKio checks every document of data as the stream reader reads it
// with kio against the oracle: the same nodes, lines and errors. A document
// with a line inside it that starts with `---` (`---x: 1`, `---#`), which
// YAML reads as content and kio as a separator, must be refused.
func compareKio(t *testing.T, data []byte) {
	t.Helper()
	for i, d := range yamlnode.SplitDocuments(data) {
		if d.Empty {
			continue
		}
		chunk := data[d.Start:d.End]
		want, wantLine, wantErr := unmarshalChunk(chunk, d.Line)
		got := parseYAMLChunk(chunk, d.Line, i)
		utf16 := bytes.HasPrefix(chunk, []byte("\xfe\xff")) || bytes.HasPrefix(chunk, []byte("\xff\xfe"))
		if utf16 && bytes.Contains(chunk, []byte("\r\n")) {
			// kio rewrites the bytes CR LF even where they are no
			// characters of a UTF-16 document (one in U+0A0D, or the end
			// of one character and the start of the next).
			continue
		}
		// A UTF-16 document is read by kio as it is: an LF byte followed by
		// `---` bytes is no line of it.
		if !utf16 && nonMarker.Match(bytes.ReplaceAll(bytes.ReplaceAll(chunk, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))) {
			if got.err == nil || !strings.Contains(got.err.Error(), "kio reads it as a document separator") {
				t.Fatalf("document %d of %q: read as %v, %v: kio would split it", i, data, got.node, got.err)
			}
			continue
		}
		switch {
		case (wantErr != nil) != (got.err != nil):
			t.Fatalf("document %d of %q: error %v, want %v", i, data, got.err, wantErr)
		case wantErr != nil:
			var pe *placeError
			if wantErr.Error() == "empty document" {
				if got.err.Error() != "empty document" {
					t.Fatalf("document %d of %q: error %v, want empty document", i, data, got.err)
				}
				continue
			}
			// kio turns CR LF into LF before yaml.v3 reads the bytes, so an
			// invalid UTF-8 sequence before a CR LF is named otherwise.
			utf8 := strings.Contains(wantErr.Error(), "UTF-8") && errors.As(got.err, &pe) && strings.Contains(pe.msg, "UTF-8")
			if !errors.As(got.err, &pe) || pe.line != wantLine || (pe.msg != wantErr.Error() && !utf8) {
				t.Fatalf("document %d of %q: error %v, want line %d: %v", i, data, got.err, wantLine, wantErr)
			}
		default:
			if got.line != wantLine {
				t.Fatalf("document %d of %q: line %d, want %d", i, data, got.line, wantLine)
			}
			if err := sameNode(want, got.node, ""); err != nil {
				t.Fatalf("document %d of %q: %v", i, data, err)
			}
		}
	}
}

var kioSeeds = []string{
	goodDoc,
	goodDoc + "---\n" + goodDoc,
	"# head\n---\n" + goodDoc + "...\n# tail\n",
	goodDoc + "---\n~\n---\n" + goodDoc,
	"--- ~\n",
	"---\n# only a comment\nnull\n",
	"a: 1\r\nb: [x, y]\r\n---\r\nc: \"two\r\n  lines\"\r\n",
	"a: 1\nb: [\n---\n" + goodDoc,
	"--- |\n  text\n  more\n---\n- &a {k: v}\n- *a\n",
	"apiVersion: v1\nkind: List\nitems:\n- kind: ObjectStateObserved\n",
	"key: 'single\n\n  folded'\n# end\n",
	"? complex\n: value\n--- !!map\n!!str k: !!int 3\n",
	"\ufeffa: 1\n",
	"%YAML 1.2\n%TAG !e! tag:example.com,2000:\n# head\r\n--- !e!thing\nk: v\n",
	"# lone CR\r\r\na: 1\r---\n",
	"\xff\xfea\x00:\x00 \x001\x00\r\x00\n\x00b\x00:\x00 \x00[\x00\r\x00\n\x00",
}

// TestKioReadsAsYAMLv3 compares the stream reader's kio reading of each
// document with yaml.v3's on the seeds: same nodes, lines, errors.
func TestKioReadsAsYAMLv3(t *testing.T) {
	for _, s := range kioSeeds {
		compareKio(t, []byte(s))
	}
}

// FuzzKioReadsAsYAMLv3 compares them on random streams.
func FuzzKioReadsAsYAMLv3(f *testing.F) {
	for _, s := range kioSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		compareKio(t, data)
	})
}

// TestKioStreamKeepsDocuments: read through kio, one bad document of a
// stream is still named by its line and skipped, a List is one document,
// and the lines count from the start of the input after comments before a
// marker.
func TestKioStreamKeepsDocuments(t *testing.T) {
	for _, tc := range []struct {
		why   string
		input string
		obs   int
		errs  []string
	}{
		{"a document kio would split is refused, named by the line", goodDoc + "---x: 1\n---\n" + goodDoc, 1, []string{"S:10: document 1: a line that starts with --- inside a document: kio reads it as a document separator"}},
		{"so is one whose line kio takes for a separator with a comment", goodDoc + "---#x: 1\n---\n" + goodDoc, 1, []string{"S:10: document 1: a line that starts with --- inside a document: kio reads it as a document separator"}},
		{"a List stays one document: its items are not observations", "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(goodDoc, "\n", "\n  ") + "\n---\n" + goodDoc, 1, []string{"S:3: document 1: items: unknown key"}},
		{"comments before a marker keep the lines of the input", "# one\n# two\n---\n" + strings.Replace(goodDoc, "cluster:", "clustr:", 1), 0, []string{"S:7: document 1: spec.clustr: unknown key"}},
		{"a null document is no observation", goodDoc + "---\n# nothing here\n~\n---\n" + goodDoc, 2, []string{"S:12: document 2: want a mapping"}},
		{"CRLF line ends read as LF", strings.ReplaceAll(goodDoc+"---\n"+goodDoc, "\n", "\r\n"), 2, nil},
	} {
		res := ParseBytes([]byte(tc.input), Options{Name: "S"})
		var errs []string
		for _, e := range res.Errors {
			errs = append(errs, e.Error())
		}
		if len(res.Observations) != tc.obs || strings.Join(errs, "\n") != strings.Join(tc.errs, "\n") {
			t.Errorf("%s: %d observations, errors %q; want %d, %q", tc.why, len(res.Observations), errs, tc.obs, tc.errs)
		}
	}
}
