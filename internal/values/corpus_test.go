package values

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// corpusFull runs every leaf of every file; without it a sample of every
// file runs, small enough for the race-enabled suite. `make corpus` sets it.
var corpusFull = flag.Bool("corpus", false, "edit every scalar leaf of every corpus file (slow)")

const corpusDir = "../../testdata/corpus/values"

// sampleSize is how many leaves (and block mappings) of a file the sample
// run edits, spread evenly over the file: fewer in the largest files, whose
// every edit parses 100-200 KB four times, to keep the race-enabled suite
// to seconds.
func sampleSize(fileBytes int) int {
	if fileBytes > 100_000 {
		return 1
	}
	return 2
}

// sampled says whether item i of n is edited in this run.
func sampled(i, n, size int) bool {
	if *corpusFull || n <= size {
		return true
	}
	step := n / size
	return i%step == step/2 && i/step < size
}

// lookalikes are strings that a plain scalar would turn into another type
// under YAML 1.1 (or that cannot be plain at all).
var lookalikes = []string{"yes", "no", "on", "off", "y", "n", "~", "null", "0755", "1.10", "1e3", "", "-x", "*a", "&a", "!a", "%a", "@a", "a: b", "a #b", "true", "2001-12-14", "0x1F", "multi\nline\n"}

// otherTypes are non-string values written over strings.
var otherTypes = []any{int64(42), 3.5, true, nil, int64(-7), false}

// sameTypeStrings rotate through plain, quoted-needing and multi-line values.
var sameTypeStrings = []string{"edited-value", "with spaces and: colon", "line one\nline two\n", "it's", "ünïcode"}

type leaf struct {
	path []yamlnode.Segment
	node *yaml.Node
}

type corpusStats struct {
	leaves, edits, noops, inserts, verifyFailures, extraLines int
	batches                                                   int
	// What Set's speculation would have come to on the same edits.
	specDeclined, specConfirmed, specMissed int
	refusals                                map[string]int
	refusalList                             []string
}

func TestCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	for _, inline := range []bool{false, true} {
		runCorpus(t, files, inline)
	}
}

// runCorpus edits every file of the corpus, as a values file, or inline:
// as the spec.values of a HelmRelease between two other documents.
func runCorpus(t *testing.T, files []string, inline bool) {
	total := corpusStats{refusals: map[string]int{}}
	for _, file := range files {
		name := filepath.Base(file)
		if inline {
			name = "inline/" + name
		}
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{}
			if inline && !*corpusFull && len(data) > 100_000 {
				// The sample run keeps the race-enabled suite to seconds:
				// the largest files are edited inline by make corpus only.
				t.Skip("large file: inline in the full run only")
			}
			if inline {
				data, opts = inHelmRelease(data), Options{Inline: true}
			}
			st := runCorpusFile(t, name, data, opts)
			total.leaves += st.leaves
			total.edits += st.edits
			total.noops += st.noops
			total.inserts += st.inserts
			total.verifyFailures += st.verifyFailures
			total.extraLines += st.extraLines
			total.batches += st.batches
			total.specDeclined += st.specDeclined
			total.specConfirmed += st.specConfirmed
			total.specMissed += st.specMissed
			for k, v := range st.refusals {
				total.refusals[k] += v
			}
			total.refusalList = append(total.refusalList, st.refusalList...)
		})
	}
	for _, r := range total.refusalList {
		t.Log("refused: " + r)
	}
	var reasons []string
	for k, v := range total.refusals {
		reasons = append(reasons, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(reasons)
	mode := "sample"
	if *corpusFull {
		mode = "full"
	}
	if inline {
		mode += ", inline in a HelmRelease"
	}
	t.Logf("corpus (%s): %d files, %d scalar leaves, %d edits (%d no-ops), %d inserts, %d ten-edit calls, %d refusals [%s], %d verification failures, %d changed lines beyond the edited ones",
		mode, len(files), total.leaves, total.edits, total.noops, total.inserts, total.batches, len(total.refusalList), strings.Join(reasons, " "), total.verifyFailures, total.extraLines)
	if !inline {
		t.Logf("speculation (%s): %d edits and ten-edit calls confirmed, %d missed, %d declined", mode, total.specConfirmed, total.specMissed, total.specDeclined)
	}
	if total.verifyFailures != 0 || total.extraLines != 0 {
		t.Errorf("verification failures %d, extra changed lines %d: both must be 0", total.verifyFailures, total.extraLines)
	}
}

// inHelmRelease is a values file as the inline values of a Flux
// HelmRelease, its lines indented under spec.values, with a document before
// and after it.
func inHelmRelease(values []byte) []byte {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: corpus\n---\n")
	b.WriteString("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: corpus\n  namespace: corpus\nspec:\n  interval: 10m\n  values:\n")
	for _, l := range strings.SplitAfter(string(values), "\n") {
		if strings.TrimSpace(l) != "" {
			b.WriteString("    ")
		}
		b.WriteString(l)
	}
	if !bytes.HasSuffix(values, []byte("\n")) {
		b.WriteString("\n")
	}
	b.WriteString("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: corpus-notes\ndata:\n  owner: platform\n")
	return b.Bytes()
}

func runCorpusFile(t *testing.T, name string, data []byte, opts Options) corpusStats {
	st := corpusStats{refusals: map[string]int{}}
	f, err := Parse(data, opts)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	root := f.doc.root
	if len(f.root) > 0 {
		loc, err := f.doc.locate(f.root)
		if err != nil {
			t.Fatalf("root: %v", err)
		}
		root = loc.node
	}
	var leaves []leaf
	var mappings [][]yamlnode.Segment
	collect(root, nil, &leaves, &mappings)
	size := sampleSize(len(data))
	if opts.Inline {
		// Inline, the sample run edits one leaf a file: the edits are the
		// plain run's, in a larger file.
		size = 1
	}
	for i, l := range leaves {
		if !sampled(i, len(leaves), size) {
			continue
		}
		st.leaves++
		old, _ := lookupValue(f.helm, f.under(l.path))
		for _, v := range []any{sameType(old, i), otherType(old, i)} {
			checkCorpusEdit(t, f, name, l.path, v, false, &st)
		}
	}
	checkCorpusBatches(t, f, name, leaves, &st)
	for i, m := range mappings {
		if !sampled(i, len(mappings), 1) {
			continue
		}
		p := appendSeg(m, yamlnode.Segment{Key: "backflowInserted"})
		checkCorpusEdit(t, f, name, p, fmt.Sprintf("v%d", i), true, &st)
	}
	return st
}

// collect lists the scalar leaves and block mappings of a node tree,
// skipping aliases (their target is listed where it is defined) and keys a
// path cannot name.
func collect(n *yaml.Node, path []yamlnode.Segment, leaves *[]leaf, mappings *[][]yamlnode.Segment) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.ScalarNode:
		*leaves = append(*leaves, leaf{path: path, node: n})
	case yaml.MappingNode:
		if n.Style&yaml.FlowStyle == 0 && len(n.Content) > 0 {
			*mappings = append(*mappings, path)
		}
		for j := 0; j+1 < len(n.Content); j += 2 {
			k := n.Content[j]
			hk, ok := helmKeyOf(k)
			if !ok || hk == "" || k.Value == "<<" {
				continue
			}
			collect(n.Content[j+1], appendSeg(path, yamlnode.Segment{Key: hk}), leaves, mappings)
		}
	case yaml.SequenceNode:
		for j, c := range n.Content {
			collect(c, appendSeg(path, yamlnode.Segment{Index: j, IsIndex: true}), leaves, mappings)
		}
	}
}

func sameType(old any, i int) any {
	switch x := old.(type) {
	case string:
		return sameTypeStrings[i%len(sameTypeStrings)]
	case bool:
		return !x
	case nil:
		return nil
	}
	if f, ok := AsNumber(old); ok {
		if i%2 == 0 {
			return int64(f) + 1
		}
		return f + 0.5
	}
	return "edited"
}

func otherType(old any, i int) any {
	if _, ok := old.(string); ok {
		return otherTypes[i%len(otherTypes)]
	}
	return lookalikes[i%len(lookalikes)]
}

// allowedRefusals are the refusals the editor may give on real files: edits
// through anchors that aliases reuse.
var allowedRefusals = []error{ErrAlias}

func checkCorpusEdit(t *testing.T, f *File, name string, path []yamlnode.Segment, v any, insert bool, st *corpusStats) {
	t.Helper()
	p := yamlnode.FormatPath(path)
	out, changes, err := f.Set([]Edit{{Path: p, Value: v}})
	st.countSpeculation(f, []Edit{{Path: p, Value: v}}, out, err)
	if err != nil {
		for _, allowed := range allowedRefusals {
			if errors.Is(err, allowed) {
				st.refusals[allowed.Error()]++
				st.refusalList = append(st.refusalList, fmt.Sprintf("%s: %s = %s: %v", name, p, Format(v), err))
				return
			}
		}
		if errors.Is(err, ErrVerify) {
			st.verifyFailures++
		}
		t.Errorf("%s = %s: %v", p, Format(v), err)
		return
	}
	if insert {
		st.inserts++
	} else {
		st.edits++
	}
	orig := f.src.data
	if bytes.Equal(out, orig) {
		st.noops++
		if len(changes) != 0 {
			t.Errorf("%s: no bytes changed but %d change records", p, len(changes))
		}
		return
	}
	if len(changes) != 1 || changes[0].Line < 1 {
		t.Errorf("%s: change records %+v", p, changes)
		return
	}
	lo, hi := allowedLines(t, f, path, insert)
	extra := extraChangedLines(orig, out, lo, hi)
	if extra > 0 {
		st.extraLines += extra
		t.Errorf("%s = %s: %d lines changed outside lines %d-%d", p, Format(v), extra, lo, hi)
	}
}

// allowedLines is the range of original lines an edit may change: the old
// token's lines, or for a new key the parent's line when it is `key: {}`
// (0-0 when only lines are added).
func allowedLines(t *testing.T, f *File, path []yamlnode.Segment, insert bool) (int, int) {
	loc, err := f.doc.locate(f.under(path))
	if err != nil {
		t.Fatalf("%s: %v", yamlnode.FormatPath(path), err)
	}
	if insert {
		if loc.parent != nil && loc.parent.Kind == yaml.MappingNode && len(loc.parent.Content) > 0 {
			return 0, 0
		}
		l := f.doc.line(loc.pkey)
		return l, l
	}
	e, err := f.doc.scanScalar(loc.node, loc.indent, loc.flow)
	if err != nil {
		t.Fatalf("%s: %v", yamlnode.FormatPath(path), err)
	}
	return f.src.lineOf(e.propStart), f.src.lineOf(e.bodyEnd)
}

// extraChangedLines counts original lines outside [lo, hi] that the output
// does not keep: the output must be the original with lines lo..hi replaced
// (or lines added when lo is 0).
func extraChangedLines(orig, out []byte, lo, hi int) int {
	a := strings.SplitAfter(string(orig), "\n")
	b := strings.SplitAfter(string(out), "\n")
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	// Original lines p+1 .. len(a)-s (1-based) differ.
	first, last := p+1, len(a)-s
	extra := 0
	for l := first; l <= last; l++ {
		if lo == 0 || l < lo || l > hi {
			extra++
		}
	}
	return extra
}

// checkCorpusBatches sets ten one-line leaves in one call, each to a new
// one-line value of its type: exactly their lines change, nothing else.
func checkCorpusBatches(t *testing.T, f *File, name string, leaves []leaf, st *corpusStats) {
	t.Helper()
	var batch []Edit
	lines := map[int]bool{}
	flush := func() {
		defer func() { batch, lines = nil, map[int]bool{} }()
		if len(batch) == 0 {
			return
		}
		out, _, err := f.Set(batch)
		st.countSpeculation(f, batch, out, err)
		if err != nil {
			if errors.Is(err, ErrVerify) {
				st.verifyFailures++
			}
			t.Errorf("%s: ten edits %v: %v", name, batch, err)
			return
		}
		st.batches++
		a := strings.SplitAfter(string(f.src.data), "\n")
		b := strings.SplitAfter(string(out), "\n")
		if len(a) != len(b) {
			st.extraLines++
			t.Errorf("%s: ten one-line edits changed the line count", name)
			return
		}
		for i := range a {
			if a[i] != b[i] && !lines[i+1] {
				st.extraLines++
				t.Errorf("%s: line %d changed outside the edited lines", name, i+1)
			}
		}
	}
	for i, l := range leaves {
		loc, err := f.doc.locate(f.under(l.path))
		if err != nil {
			continue // refused paths (aliases) are counted by the single edits
		}
		e, err := f.doc.scanScalar(loc.node, loc.indent, loc.flow)
		if err != nil || e.block || f.src.lineOf(e.propStart) != f.src.lineOf(e.end) {
			continue
		}
		old, _ := lookupValue(f.helm, f.under(l.path))
		v := sameType(old, 0)
		if _, ok := old.(string); ok {
			v = fmt.Sprintf("batch-%d", i)
		}
		batch = append(batch, Edit{Path: yamlnode.FormatPath(l.path), Value: v})
		lines[f.src.lineOf(e.start)] = true
		if len(batch) == 10 {
			flush()
			if !*corpusFull {
				return
			}
		}
	}
}

// countSpeculation counts what Set's speculation of edits on f would have
// come to, beside the editor's result (out, err) of the same edits: Set
// confirms it where the editor's output is a change and is the
// speculation's. Set does not speculate on inline values.
func (st *corpusStats) countSpeculation(f *File, edits []Edit, out []byte, err error) {
	if len(f.root) > 0 {
		return
	}
	spec, _, ok := speculativeOutput(f.src, f.index, edits)
	switch {
	case !ok:
		st.specDeclined++
	case err == nil && !bytes.Equal(out, f.src.data) && bytes.Equal(spec, out):
		st.specConfirmed++
	default:
		st.specMissed++
	}
}
