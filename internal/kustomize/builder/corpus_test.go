package builder

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/kustomize"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/witness"
	"github.com/backflow-dev/backflow/internal/yamlnode"

	sigsyaml "sigs.k8s.io/yaml"
)

// corpusFull writes every scalar leaf of every built object of the corpus;
// without it a few leaves of every overlay run, small enough for the
// race-enabled suite. `make corpus` sets it.
var corpusFull = flag.Bool("corpus", false, "write back every scalar leaf of every corpus overlay (slow)")

const corpusDir = "../../../testdata/corpus/kustomize"

// corpusSample is how many leaves of each overlay the short run writes,
// spread evenly over the overlay's objects.
const corpusSample = 2

// corpusStats counts one tree's outcomes.
type corpusStats struct {
	overlays, fields, written, overrides int
	refused                              map[string]int
	failures                             []string
}

// TestCorpus writes a changed value for every scalar leaf of every object
// that every kustomization of the corpus (real layouts, see
// testdata/corpus/kustomize/SOURCES.md) builds, through the planner's entry
// point (Builder.Write: Locate, then Write in place), and rebuilds: each
// write must change exactly that field to that value in the build, leave
// every other file as it was and change only the edited line of the file it
// edits; each refusal must say where the value comes from. Fields whose
// source is outside the overlay's folder are also written as the overlay's
// override (own refusing the shared file) and witnessed the same way.
func TestCorpus(t *testing.T) {
	trees, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var total corpusStats
	total.refused = map[string]int{}
	n := 0
	for _, tree := range trees {
		if !tree.IsDir() {
			continue
		}
		n++
		files := readTree(t, filepath.Join(corpusDir, tree.Name()))
		st := corpusTree(t, tree.Name(), files)
		t.Logf("%s: %d kustomizations, %d fields, %d written (%d also as overrides), refused %s, %d failures",
			tree.Name(), st.overlays, st.fields, st.written, st.overrides, reasons(st.refused), len(st.failures))
		for _, f := range st.failures {
			t.Errorf("%s: %s", tree.Name(), f)
		}
		total.overlays += st.overlays
		total.fields += st.fields
		total.written += st.written
		total.overrides += st.overrides
		for k, v := range st.refused {
			total.refused[k] += v
		}
		total.failures = append(total.failures, st.failures...)
	}
	mode := "sample"
	if *corpusFull {
		mode = "full"
	}
	t.Logf("corpus (%s): %d trees, %d kustomizations, %d fields, %d written (%d also as overrides), refused %s, "+
		"%d failures, in %s", mode, n, total.overlays, total.fields, total.written, total.overrides,
		reasons(total.refused), len(total.failures), time.Since(start).Round(time.Millisecond))
	if n == 0 {
		t.Fatal("no corpus trees")
	}
}

// readTree reads every file under dir, keyed by its slash path below dir
// (the tree is a repository).
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func reasons(m map[string]int) string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

// corpusTree builds every kustomization of one tree and writes its leaves.
func corpusTree(t *testing.T, tree string, repo map[string][]byte) corpusStats {
	st := corpusStats{refused: map[string]int{}}
	var dirs []string
	for p := range repo {
		if slices.Contains([]string{"kustomization.yaml", "kustomization.yml", "Kustomization"}, path.Base(p)) {
			dirs = append(dirs, path.Dir(p))
		}
	}
	sort.Strings(dirs)
	read := func(p string) ([]byte, error) {
		if d, ok := repo[p]; ok {
			return d, nil
		}
		return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
	}
	for _, dir := range dirs {
		if component(repo, dir) {
			// A component builds only inside a kustomization that
			// includes it.
			continue
		}
		st.overlays++
		b := &Builder{}
		files, err := b.Inputs(read, nil, dir)
		if errors.Is(err, kustomize.ErrRefused) {
			st.refused["overlay: "+refusalKind(err.Error())]++
			continue
		}
		if err != nil {
			st.failures = append(st.failures, fmt.Sprintf("%s: reading inputs: %v", dir, err))
			continue
		}
		before, err := kustomize.Run(files, dir)
		if err != nil {
			st.failures = append(st.failures, fmt.Sprintf("%s: build: %v", dir, err))
			continue
		}
		leaves := builtLeaves(before)
		for i, l := range leaves {
			if !*corpusFull && !sampled(i, len(leaves)) {
				continue
			}
			st.fields++
			corpusField(&st, b, files, dir, before, l)
		}
	}
	return st
}

// component reports whether dir's kustomization is a Component.
func component(repo map[string][]byte, dir string) bool {
	var k struct {
		Kind string `json:"kind"`
	}
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if data, ok := repo[path.Join(dir, n)]; ok {
			return sigsyaml.Unmarshal(data, &k) == nil && k.Kind == "Component"
		}
	}
	return false
}

// sampled spreads the short run's leaves evenly over an overlay's.
func sampled(i, n int) bool {
	if n <= corpusSample {
		return true
	}
	step := n / corpusSample
	return i%step == step/2 && i/step < corpusSample
}

// corpusLeaf is one scalar leaf of a built object.
type corpusLeaf struct {
	object, field string
	old           any
}

// builtLeaves lists every scalar leaf of every built object, objects and
// leaves in a stable order, less the object's identity.
func builtLeaves(b *kustomize.Build) []corpusLeaf {
	var out []corpusLeaf
	for _, key := range slices.Sorted(maps.Keys(b.Rendering.Objects)) {
		out = append(out, leavesOf(key, b.Rendering.Objects[key])...)
	}
	return out
}

// leavesOf lists the scalar leaves of obj in a stable order, less its
// identity (apiVersion, kind, metadata.name and metadata.namespace).
func leavesOf(object string, obj map[string]any) []corpusLeaf {
	var out []corpusLeaf
	var walk func(v any, segs []yamlnode.Segment)
	walk = func(v any, segs []yamlnode.Segment) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k], append(slices.Clone(segs), yamlnode.Segment{Key: k}))
			}
		case []any:
			for i, item := range x {
				walk(item, append(slices.Clone(segs), yamlnode.Segment{Index: i, IsIndex: true}))
			}
		case nil:
		default:
			field := yamlnode.FormatPath(segs)
			switch field {
			case "apiVersion", "kind", "metadata.name", "metadata.namespace", "metadata.generateName":
				return
			}
			out = append(out, corpusLeaf{object: object, field: field, old: x})
		}
	}
	walk(obj, nil)
	return out
}

// changed is another value of old's type.
func changed(old any) any {
	switch x := old.(type) {
	case string:
		// A block scalar's last line break stays, as its header does.
		if t, ok := strings.CutSuffix(x, "\n"); ok {
			return t + "-x\n"
		}
		return x + "-x"
	case bool:
		return !x
	case int:
		return x + 1
	case int64:
		return x + 1
	case float64:
		if x == float64(int64(x)) {
			return int64(x) + 1
		}
		return x + 0.5
	}
	return nil
}

// corpusField writes one leaf through Builder.Write, in place and (for a
// source outside the overlay's folder) as the overlay's override, and
// checks each outcome.
func corpusField(st *corpusStats, b *Builder, files map[string][]byte, dir string, before *kustomize.Build,
	l corpusLeaf) {
	live := changed(l.old)
	what := fmt.Sprintf("%s: %s %s (%v -> %v)", dir, l.object, l.field, l.old, live)
	if live == nil {
		st.failures = append(st.failures, what+": a scalar of unexpected type "+fmt.Sprintf("%T", l.old))
		return
	}
	object, err := observe.ParseObjectKey(l.object)
	if err != nil {
		st.failures = append(st.failures, what+": "+err.Error())
		return
	}
	f := plan.KustomizeField{Object: object, Field: l.field, Old: l.old, Live: live}
	inPlace, err := corpusWrite(b, files, dir, before, f, func(string, plan.KustomizeField) bool { return true })
	switch {
	case err != nil:
		st.failures = append(st.failures, what+": "+err.Error())
		return
	case inPlace.Refused != "":
		kind := refusalKind(inPlace.Refused)
		if kind == "" {
			st.failures = append(st.failures, what+": a refusal that names no source: "+inPlace.Refused)
			return
		}
		st.refused[kind]++
		return
	}
	st.written++
	if path.Dir(inPlace.File) == dir {
		return
	}
	over, err := corpusWrite(b, files, dir, before, f, func(string, plan.KustomizeField) bool { return false })
	switch {
	case err != nil:
		st.failures = append(st.failures, what+" as an override: "+err.Error())
	case over.Refused != "":
		if refusalKind(over.Refused) == "" {
			st.failures = append(st.failures, what+" as an override: a refusal that names no source: "+over.Refused)
			return
		}
		st.refused["override: "+refusalKind(over.Refused)]++
	default:
		st.overrides++
	}
}

// corpusWrite asks Builder.Write to write f, then rebuilds and checks the
// write: the witness accepts it, no file but the written one changed, and
// the written one only in the edited line (or, for an override, by lines
// added). A panic is an error.
func corpusWrite(b *Builder, files map[string][]byte, dir string, before *kustomize.Build, f plan.KustomizeField,
	own func(string, plan.KustomizeField) bool) (w plan.KustomizeWritten, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	orig := maps.Clone(files)
	for k, v := range files {
		orig[k] = bytes.Clone(v)
	}
	out, edited, err := b.Write(files, dir, own, []plan.KustomizeField{f})
	if err != nil {
		return w, fmt.Errorf("an error, not a refusal: %w", err)
	}
	for k, v := range files {
		if !bytes.Equal(v, orig[k]) {
			return w, fmt.Errorf("Write changed the caller's %s", k)
		}
	}
	if len(out) != 1 {
		return w, fmt.Errorf("%d results for one field", len(out))
	}
	w = out[0]
	if w.Refused != "" {
		if len(edited) != 0 {
			return w, fmt.Errorf("refused (%s) but edited %v", w.Refused, slices.Sorted(maps.Keys(edited)))
		}
		return w, nil
	}
	if len(edited) != 1 || edited[w.File] == nil {
		return w, fmt.Errorf("written at %s %s but edited %v", w.File, w.Path, slices.Sorted(maps.Keys(edited)))
	}
	if _, ok := files[w.File]; !ok {
		return w, fmt.Errorf("wrote %s, not one of the build's files", w.File)
	}
	if err := onlyEdited(files[w.File], edited[w.File], w.Why != ""); err != nil {
		return w, fmt.Errorf("%s %s: %w", w.File, w.Path, err)
	}
	after := maps.Clone(files)
	after[w.File] = edited[w.File]
	rebuilt, err := kustomize.Run(after, dir)
	if err != nil {
		return w, fmt.Errorf("wrote %s %s, and the overlay no longer builds: %w", w.File, w.Path, err)
	}
	if m := kustomize.Witness(before, rebuilt, []witness.Accepted{{Object: f.Object.String(), Field: f.Field, Live: f.Live}}); len(m) > 0 {
		return w, fmt.Errorf("wrote %s %s, and the witness denies it: %v", w.File, w.Path, m)
	}
	return w, nil
}

// onlyEdited checks that after differs from before in one line (an edit in
// place: the same line count, one line changed), or, for an override, in
// lines added and at most one changed (a key given a first item).
func onlyEdited(before, after []byte, override bool) error {
	bl := strings.SplitAfter(string(before), "\n")
	al := strings.SplitAfter(string(after), "\n")
	p := 0
	for p < len(bl) && p < len(al) && bl[p] == al[p] {
		p++
	}
	s := 0
	for s < len(bl)-p && s < len(al)-p && bl[len(bl)-1-s] == al[len(al)-1-s] {
		s++
	}
	gone, added := bl[p:len(bl)-s], al[p:len(al)-s]
	if len(gone) == len(added) {
		// The same lines but two: the value's, and its block scalar's
		// header when the editor gives it another chomping indicator.
		var differ []int
		for i := range gone {
			if gone[i] != added[i] {
				differ = append(differ, i)
			}
		}
		if len(differ) == 2 && chompOnly(gone[differ[0]], added[differ[0]]) {
			gone, added = gone[differ[1]:differ[1]+1], added[differ[1]:differ[1]+1]
		}
	}
	switch {
	case !override && (len(gone) > 1 || len(added) > 2):
		return fmt.Errorf("the edit changed lines %d to %d (%q into %q): more than the edited value's",
			p+1, len(bl)-s, strings.Join(gone, ""), strings.Join(added, ""))
	case override && len(gone) > 1:
		return fmt.Errorf("the override changed lines %d to %d (%q): it may only add lines",
			p+1, len(bl)-s, strings.Join(gone, ""))
	}
	return nil
}

// chompOnly reports whether two lines are a block scalar's header that
// differs only in its chomping indicator (| and |-, > and >-).
func chompOnly(a, b string) bool {
	a, b = strings.TrimRight(a, "\n"), strings.TrimRight(b, "\n")
	for _, h := range []string{"|", ">"} {
		for _, c := range []string{"-", "+"} {
			if strings.HasSuffix(a, h) && a+c == b || strings.HasSuffix(b, h) && b+c == a {
				return true
			}
		}
	}
	return false
}

// refusalKinds name the sources a refusal may give, in the words the
// refusals use; a refusal in none of them is a failure.
var refusalKinds = []struct{ kind, says string }{
	{"generator", " is made by "},
	{"replacement", "set by a replacement"},
	{"component", "the component "},
	{"remote", "remote"},
	{"postBuild", "postBuild"},
	{"plugin", "plugin"},
	{"helm", "helmCharts"},
	{"labels", "on every object it builds"},
	{"merge key", "is the key kustomize merges the list item by"},
	{"built more than once", "which the overlay builds"},
	{"added by kustomize", "kustomize adds it after"},
	{"vars", "the vars: of"},
	{"changed by kustomize", "in the build:"},
}

// refusalKind is the kind of source a refusal names, or "" when it names
// none.
func refusalKind(reason string) string {
	for _, k := range refusalKinds {
		if strings.Contains(reason, k.says) {
			return k.kind
		}
	}
	return ""
}

// TestCorpusManifests edits every scalar leaf of every document of the
// corpus's resource files (the files its kustomizations build objects
// from) as the planner edits a unit of plain manifests: values.Parse with
// the document's index, then SetRead with the field as its own path. Each
// edit must change only the edited line, leave every other document's
// bytes as they were, and read back as the document with that one field
// changed; a refusal must be the editor's (values.ErrRefused).
func TestCorpusManifests(t *testing.T) {
	trees, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var docs, fields, written int
	refused := map[string]int{}
	for _, tree := range trees {
		if !tree.IsDir() {
			continue
		}
		repo := readTree(t, filepath.Join(corpusDir, tree.Name()))
		for _, file := range resourceFiles(t, repo) {
			data := repo[file]
			for i, d := range yamlnode.SplitDocuments(data) {
				var m map[string]any
				if err := sigsyaml.Unmarshal(data[d.Start:d.End], &m); err != nil {
					t.Errorf("%s/%s document %d: %v", tree.Name(), file, i, err)
					continue
				}
				if m == nil {
					continue
				}
				docs++
				leaves := leavesOf(file, m)
				for n, l := range leaves {
					// One leaf a document in the sample: the editor's own
					// corpus (internal/values) edits far larger files.
					if !*corpusFull && n != len(leaves)/2 {
						continue
					}
					fields++
					why, err := editManifest(data, i, m, l)
					switch {
					case err != nil:
						t.Errorf("%s/%s document %d %s (%v): %v", tree.Name(), file, i, l.field, l.old, err)
					case why != "":
						refused[why]++
					default:
						written++
					}
				}
			}
		}
	}
	mode := "sample"
	if *corpusFull {
		mode = "full"
	}
	t.Logf("manifests (%s): %d documents, %d fields, %d written, refused %s, in %s", mode, docs, fields, written,
		reasons(refused), time.Since(start).Round(time.Millisecond))
	if docs == 0 {
		t.Fatal("no documents")
	}
}

// resourceFiles are the files a tree's kustomizations build objects from,
// sorted.
func resourceFiles(t *testing.T, repo map[string][]byte) []string {
	read := func(p string) ([]byte, error) {
		if d, ok := repo[p]; ok {
			return d, nil
		}
		return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
	}
	seen := map[string]bool{}
	for p := range repo {
		if path.Base(p) != "kustomization.yaml" || component(repo, path.Dir(p)) {
			continue
		}
		files, err := kustomize.Inputs(read, path.Dir(p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		b, err := kustomize.Run(files, path.Dir(p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, o := range b.Origin {
			if o.Path != "" {
				seen[o.Path] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// editManifest sets leaf l of document doc (read as m) of data to another
// value of its type, and checks the edit; it returns the editor's refusal.
func editManifest(data []byte, doc int, m map[string]any, l corpusLeaf) (refused string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	live := changed(l.old)
	f, err := values.Parse(data, values.Options{Document: &doc})
	if err != nil {
		return "", err
	}
	out, _, err := f.SetRead([]values.Edit{{Path: l.field, Value: live}})
	if errors.Is(err, values.ErrRefused) {
		return err.Error(), nil
	}
	if err != nil {
		return "", err
	}
	if err := onlyEdited(data, out, false); err != nil {
		return "", err
	}
	before, after := yamlnode.SplitDocuments(data), yamlnode.SplitDocuments(out)
	if len(before) != len(after) {
		return "", fmt.Errorf("%d documents after the edit, %d before", len(after), len(before))
	}
	for i := range before {
		if i != doc && !bytes.Equal(data[before[i].Start:before[i].End], out[after[i].Start:after[i].End]) {
			return "", fmt.Errorf("document %d changed", i)
		}
	}
	var got map[string]any
	if err := sigsyaml.Unmarshal(out[after[doc].Start:after[doc].End], &got); err != nil {
		return "", fmt.Errorf("the edited document does not read: %w", err)
	}
	want := jsonCopy(m)
	segs, err := yamlnode.ParsePath(l.field)
	if err != nil {
		return "", err
	}
	setIn(want, segs, jsonCopy(live))
	if !reflect.DeepEqual(jsonCopy(got), want) {
		return "", fmt.Errorf("the edited document reads %v, want %v", got, want)
	}
	return "", nil
}

// jsonCopy is a deep copy of v read back through JSON, numbers as float64.
func jsonCopy(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(err)
	}
	return out
}

// setIn sets the leaf at segs of a tree read through JSON.
func setIn(tree any, segs []yamlnode.Segment, v any) {
	for i, s := range segs {
		last := i == len(segs)-1
		switch x := tree.(type) {
		case map[string]any:
			if last {
				x[s.Key] = v
				return
			}
			tree = x[s.Key]
		case []any:
			if last {
				x[s.Index] = v
				return
			}
			tree = x[s.Index]
		}
	}
}
