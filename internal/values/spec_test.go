package values

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// speculationCounts is a snapshot of the speculation counters.
type speculationCounts struct{ declined, confirmed, missed int64 }

func countSpeculations() speculationCounts {
	return speculationCounts{speculations.declined.Load(), speculations.confirmed.Load(), speculations.missed.Load()}
}

// sameAsInTurn runs Set (which speculates) and setInTurn on the same input
// and fails unless bytes, changes and error text are equal. It returns what
// the speculation came to.
func sameAsInTurn(t *testing.T, data []byte, edits []Edit, opts Options) speculationCounts {
	t.Helper()
	before := countSpeculations()
	out, changes, err := Set(data, edits, opts)
	after := countSpeculations()
	wantOut, wantChanges, wantErr := setInTurn(data, edits, opts)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%v: error %v, in turn %v", edits, err, wantErr)
	}
	if !bytes.Equal(out, wantOut) {
		t.Fatalf("%v: output\n%s\nin turn\n%s", edits, out, wantOut)
	}
	if !reflect.DeepEqual(changes, wantChanges) {
		t.Fatalf("%v: changes %+v, in turn %+v", edits, changes, wantChanges)
	}
	return speculationCounts{after.declined - before.declined, after.confirmed - before.confirmed, after.missed - before.missed}
}

func TestSpeculationConfirmed(t *testing.T) {
	data := []byte("# values\na:\n  # the count\n  b: 1 # c\n  s: 'x'\nd: \"q\"\n")
	for _, edits := range [][]Edit{
		{{Path: "a.b", Value: int64(2)}},
		{{Path: "a.s", Value: "it's"}},
		{{Path: "d", Value: "yes"}},
		{{Path: "a.b", Value: "two"}, {Path: "d", Value: false}},
	} {
		if got := sameAsInTurn(t, data, edits, Options{}); got != (speculationCounts{confirmed: 1}) {
			t.Errorf("%v: speculations %+v, want one confirmed", edits, got)
		}
	}
}

func TestSpeculationDeclined(t *testing.T) {
	for _, c := range []struct {
		data string
		edit Edit
	}{
		{"l:\n- 1\n", Edit{Path: "l[0]", Value: int64(2)}},                    // a list index
		{"a:\n  b: |\n    x\n", Edit{Path: "a.b", Value: "y"}},                // a block scalar
		{"a: &x 1\nb: *x\n", Edit{Path: "a", Value: int64(2)}},                // an anchor
		{"a:\n  b: 1\n", Edit{Path: "a.c", Value: int64(2)}},                  // a new key
		{"a: 1\n", Edit{Path: "a", Value: "two\nlines"}},                      // a block scalar to write
		{"a: \"x\\ty\"\n", Edit{Path: "a", Value: "z"}},                       // an escape
		{"a: x\n  y\n", Edit{Path: "a", Value: "z"}},                          // a folded plain scalar
		{"on: 1\n", Edit{Path: "true", Value: int64(2)}},                      // a YAML 1.1 key
		{"a: {b: 1}\n", Edit{Path: "a.b", Value: int64(2)}},                   // a flow mapping
		{"\ufeffa: 1\n", Edit{Path: "a", Value: int64(2)}},                    // a byte-order mark
		{"env:\n- name: TZ\n", Edit{Path: "env[name=TZ].name", Value: "CET"}}, // a selector
		{"a: 1\n", Edit{Path: "a", Value: []int{1}}},                          // a value the editor cannot write
	} {
		if got := sameAsInTurn(t, []byte(c.data), []Edit{c.edit}, Options{}); got != (speculationCounts{declined: 1}) {
			t.Errorf("%q %v: speculations %+v, want one declined", c.data, c.edit, got)
		}
	}
}

func TestSpeculationMissed(t *testing.T) {
	for _, c := range []struct {
		data string
		edit Edit
	}{
		// Helm reads 0x10 as 16 already: the editor changes nothing, the
		// speculation wrote 16.
		{"a: 0x10\n", Edit{Path: "a", Value: int64(16)}},
		// The line `  b: 2"` is inside a quoted scalar: the editor adds
		// the key b, the speculation replaced `2"`.
		{"x:\n  a: \"one\n  b: 2\"\ny: 1\n", Edit{Path: "x.b", Value: int64(3)}},
		// A key twice: the editor refuses it, the line reader takes the
		// first.
		{"a:\n  b: 1\n  b: 2\n", Edit{Path: "a.b", Value: int64(3)}},
		// Helm reads yes as true: nothing to change.
		{"a:\n  b: yes\n", Edit{Path: "a.b", Value: true}},
	} {
		if got := sameAsInTurn(t, []byte(c.data), []Edit{c.edit}, Options{}); got != (speculationCounts{missed: 1}) {
			t.Errorf("%q %v: speculations %+v, want one missed", c.data, c.edit, got)
		}
	}
}

// TestSpeculationNotWithReadings: the planner's edits (File.SetRead, Set
// with Readings, a Root) read in turn, without speculating.
func TestSpeculationNotWithReadings(t *testing.T) {
	data := []byte("a:\n  b: 1\n")
	before := countSpeculations()
	if _, _, err := Set(data, []Edit{{Path: "a.b", Value: int64(2)}}, Options{Readings: NewReadings()}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Set(data, []Edit{{Path: "b", Value: int64(2)}}, Options{Root: "a"}); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.SetRead([]Edit{{Path: "a.b", Value: int64(2)}}); err != nil {
		t.Fatal(err)
	}
	if got := countSpeculations(); got != before {
		t.Errorf("speculations %+v, before %+v", got, before)
	}
}

// TestSpeculationCorpus edits leaves of every corpus file with and
// without speculation, and says how many of the edits it confirmed.
func TestSpeculationCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var total speculationCounts
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var root yaml.Node
		if err := yaml.Unmarshal(data, &root); err != nil {
			t.Fatal(err)
		}
		var leaves []leaf
		var mappings [][]yamlnode.Segment
		collect(root.Content[0], nil, &leaves, &mappings)
		for i, l := range leaves {
			if !sampled(i, len(leaves), 3) {
				continue
			}
			got := sameAsInTurn(t, data, []Edit{{Path: yamlnode.FormatPath(l.path), Value: "edited"}}, Options{})
			total.declined += got.declined
			total.confirmed += got.confirmed
			total.missed += got.missed
		}
	}
	t.Logf("speculations: %d confirmed, %d missed, %d declined", total.confirmed, total.missed, total.declined)
	if total.confirmed == 0 {
		t.Errorf("no speculation confirmed on the corpus")
	}
}

// FuzzSpeculation: Set, which speculates, returns what Parse and File.Set
// return in turn: the same bytes, changes and error text.
func FuzzSpeculation(f *testing.F) {
	f.Add("a:\n  b: 1 # c\n", "a.b", "2")
	f.Add("a: 'x'\nb: \"y\"\n", "b", "it's")
	f.Add("x:\n  a: \"one\n  b: 2\"\ny: 1\n", "x.b", "3")
	f.Add("a: 0x10\n", "a", "16")
	f.Add("a:\r\n  b: on\r\n", "a.b", "off")
	dirs, _ := filepath.Glob("testdata/golden/*")
	for _, dir := range dirs {
		original, err := os.ReadFile(filepath.Join(dir, "original"))
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, "edits.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		var spec goldenSpec
		if err := yaml.Unmarshal(raw, &spec); err != nil {
			f.Fatal(err)
		}
		for _, e := range spec.Edits {
			f.Add(string(original), e.Path, e.Value)
		}
	}
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.yaml"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var root yaml.Node
		if err := yaml.Unmarshal(data, &root); err != nil {
			f.Fatal(err)
		}
		var leaves []leaf
		var mappings [][]yamlnode.Segment
		collect(root.Content[0], nil, &leaves, &mappings)
		for i, l := range leaves {
			if sampled(i, len(leaves), 2) {
				f.Add(string(data), yamlnode.FormatPath(l.path), "edited")
			}
		}
	}
	f.Fuzz(func(t *testing.T, data, path, value string) {
		v, err := ParseScalar(value)
		if err != nil {
			return
		}
		zero := 0
		sameAsInTurn(t, []byte(data), []Edit{{Path: path, Value: v}}, Options{Document: &zero})
	})
}

// BenchmarkSetOneShot is one edit of each of the two corpus files that are
// mostly comment, as `backflow values set` makes it: Set, which
// speculates, beside Parse and File.Set in turn.
func BenchmarkSetOneShot(b *testing.B) {
	for _, c := range []struct{ file, path string }{
		{"cert-manager", "webhook.livenessProbe.failureThreshold"},
		{"vault", "server.livenessProbe.failureThreshold"},
	} {
		data, err := os.ReadFile(filepath.Join(corpusDir, c.file+".values.yaml"))
		if err != nil {
			b.Fatal(err)
		}
		edits := []Edit{{Path: c.path, Value: int64(7)}}
		for _, way := range []struct {
			name string
			set  func([]byte, []Edit, Options) ([]byte, []Change, error)
		}{{"speculating", Set}, {"in-turn", setInTurn}} {
			b.Run(c.file+"/"+way.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := way.set(data, edits, Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
