package values

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// readingSize is what one reading of doc costs in a Readings.
func readingSize(t *testing.T, doc string) int64 {
	t.Helper()
	r := NewReadings()
	if _, err := r.HelmUnmarshal([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	return r.Stats().Bytes
}

func TestReadingsEvictLeastRecentlyUsed(t *testing.T) {
	doc := func(i int) []byte { return fmt.Appendf(nil, "key: value-%d\n", i) }
	size := readingSize(t, string(doc(0)))
	r := NewBoundedReadings(3 * size)
	read := func(i int) {
		t.Helper()
		v, err := r.HelmUnmarshal(doc(i))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]any{"key": fmt.Sprintf("value-%d", i)}; !reflect.DeepEqual(v, want) {
			t.Fatalf("document %d read as %#v, want %#v", i, v, want)
		}
	}
	read(0)
	read(1)
	read(2)
	read(0) // 0 is now the most recently used, 1 the least
	read(3) // no room for four: 1 goes
	s := r.Stats()
	if s.Entries != 3 || s.Evictions != 1 || s.Bytes != 3*size || s.Hits != 1 || s.Misses != 4 {
		t.Fatalf("after five reads of four documents in room for three: %+v", s)
	}
	for _, i := range []int{0, 2, 3} {
		read(i)
	}
	if s2 := r.Stats(); s2.Hits != s.Hits+3 || s2.Misses != s.Misses {
		t.Fatalf("0, 2 and 3 should have been kept: %+v", s2)
	}
	read(1)
	if s3 := r.Stats(); s3.Misses != s.Misses+1 || s3.Evictions != 2 || s3.Entries != 3 {
		t.Fatalf("1 should have been dropped and read again, dropping another: %+v", s3)
	}
}

func TestReadingsStayWithinBudget(t *testing.T) {
	const budget = 8 << 10
	r := NewBoundedReadings(budget)
	for i := range 500 {
		var b bytes.Buffer
		for j := range i % 17 {
			fmt.Fprintf(&b, "k%d: [%d, x, {y: z}]\n", j, i)
		}
		if _, err := r.HelmUnmarshal(b.Bytes()); err != nil {
			t.Fatal(err)
		}
		if s := r.Stats(); s.Bytes > budget || s.Bytes <= 0 {
			t.Fatalf("after %d documents: %d bytes kept, budget %d", i+1, s.Bytes, budget)
		}
	}
	s := r.Stats()
	if s.Evictions == 0 || int64(s.Entries)+s.Evictions != s.Misses {
		t.Fatalf("every document read once is kept or dropped: %+v", s)
	}
	// One entry larger than the whole budget is read but not kept, and
	// drops nothing.
	var big bytes.Buffer
	for j := range 2000 {
		fmt.Fprintf(&big, "k%d: v\n", j)
	}
	if _, err := r.HelmUnmarshal(big.Bytes()); err != nil {
		t.Fatal(err)
	}
	if s2 := r.Stats(); s2.Entries != s.Entries || s2.Evictions != s.Evictions || s2.Bytes != s.Bytes {
		t.Fatalf("a reading over the budget changed what is kept: %+v, before %+v", s2, s)
	}
}

func TestReadingsUnbounded(t *testing.T) {
	r := NewReadings()
	for i := range 100 {
		if _, err := r.HelmUnmarshal(fmt.Appendf(nil, "k: %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	if s := r.Stats(); s.Entries != 100 || s.Evictions != 0 {
		t.Fatalf("an unbounded Readings dropped entries: %+v", s)
	}
}

// TestReadingsRememberEdits checks a verified edit is taken from Readings
// only for the same file, document, root and edits: each thing that
// decides the output, changed alone, misses and gives its own result.
func TestReadingsRememberEdits(t *testing.T) {
	file := []byte("---\na: 1 # one\nb:\n  c: x\n---\na: 1 # one\nb:\n  c: x\n")
	doc := func(i int) *int { return &i }
	r := NewReadings()
	type call struct {
		name  string
		data  []byte
		opts  Options
		edits []Edit
	}
	base := call{"first", file, Options{Document: doc(0)}, []Edit{{Path: "a", Value: int64(2)}, {Path: "b.d", Value: "y"}}}
	calls := []call{
		base,
		{"another value", file, Options{Document: doc(0)}, []Edit{{Path: "a", Value: int64(3)}, {Path: "b.d", Value: "y"}}},
		{"another type, same text", file, Options{Document: doc(0)}, []Edit{{Path: "a", Value: "2"}, {Path: "b.d", Value: "y"}}},
		{"a float", file, Options{Document: doc(0)}, []Edit{{Path: "a", Value: 2.0}, {Path: "b.d", Value: "y"}}},
		{"an int", file, Options{Document: doc(0)}, []Edit{{Path: "a", Value: 2}, {Path: "b.d", Value: "y"}}},
		{"another path", file, Options{Document: doc(0)}, []Edit{{Path: "a", Value: int64(2)}, {Path: "b.e", Value: "y"}}},
		{"the edits in another order", file, Options{Document: doc(0)}, []Edit{{Path: "b.d", Value: "y"}, {Path: "a", Value: int64(2)}}},
		{"fewer edits", file, Options{Document: doc(0)}, []Edit{{Path: "a", Value: int64(2)}}},
		{"another document", file, Options{Document: doc(1)}, base.edits},
		{"another root", file, Options{Document: doc(0), Root: "b"}, []Edit{{Path: "d", Value: "y"}}},
		{"other bytes", append(bytes.Clone(file), "# end\n"...), Options{Document: doc(0)}, base.edits},
	}
	seen := map[string]string{}
	for _, c := range calls {
		want, wantChanges, err := Set(c.data, c.edits, c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if prev, ok := seen[string(want)]; ok && c.name != "an int" && c.name != "the edits in another order" {
			t.Fatalf("%s gives the same output as %s: the case tests nothing", c.name, prev)
		}
		seen[string(want)] = c.name
		sp := newSource(want).docs[*c.opts.Document]
		wantTree, err := HelmUnmarshal(want[sp.start:sp.end])
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 {
			o := c.opts
			o.Readings = r
			f, err := Parse(c.data, o)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			before := r.Stats()
			out, tree, err := f.SetRead(c.edits)
			if err != nil {
				t.Fatalf("%s, round %d: %v", c.name, round, err)
			}
			after := r.Stats()
			if hit := after.Hits - before.Hits; hit != int64(round) {
				t.Errorf("%s, round %d: %d hits, want %d (%+v)", c.name, round, hit, round, after)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("%s, round %d: got\n%s\nwant\n%s", c.name, round, out, want)
			}
			if !reflect.DeepEqual(tree, wantTree) {
				t.Errorf("%s, round %d: Helm's reading %#v, want %#v", c.name, round, tree, wantTree)
			}
			// The caller owns the bytes: changing them changes nothing
			// remembered.
			for i := range out {
				out[i] = '#'
			}
			_, changes, err := f.Set(c.edits)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(changes, wantChanges) {
				t.Errorf("%s, round %d: changes %+v, want %+v", c.name, round, changes, wantChanges)
			}
		}
	}
}

func TestReadingsForgetRefusals(t *testing.T) {
	r := NewReadings()
	f, err := Parse([]byte("a: &x 1\nb: *x\n"), Options{Readings: r})
	if err != nil {
		t.Fatal(err)
	}
	before := r.Stats()
	for range 2 {
		if _, _, err := f.SetRead([]Edit{{Path: "a", Value: int64(2)}}); !errors.Is(err, ErrAlias) {
			t.Fatalf("got %v, want ErrAlias", err)
		}
	}
	if s := r.Stats(); s.Entries != before.Entries || s.Hits != before.Hits {
		t.Fatalf("a refused edit was remembered: %+v, before %+v", s, before)
	}
	// A value of a type the editor cannot write is refused each time.
	for range 2 {
		if _, _, err := f.SetRead([]Edit{{Path: "c", Value: []int{1}}}); !errors.Is(err, ErrUnsupportedVal) {
			t.Fatalf("a list value: got %v, want ErrUnsupportedVal", err)
		}
	}
	if s := r.Stats(); s.Entries != before.Entries {
		t.Fatalf("a refused edit was remembered: %+v, before %+v", s, before)
	}
	if _, _, err := f.SetRead([]Edit{{Path: "c", Value: json.Number("2")}}); err != nil {
		t.Fatal(err)
	}
	if s := r.Stats(); s.Entries != before.Entries+1 {
		t.Fatalf("a verified edit was not remembered: %+v, before %+v", s, before)
	}
}

// TestReadingsConcurrent reads and edits from several goroutines through
// one small Readings; with -race it checks the locking, and every result
// must equal the one made without Readings.
func TestReadingsConcurrent(t *testing.T) {
	files := make([][]byte, 12)
	wants := make([][]byte, len(files))
	edits := []Edit{{Path: "a.b", Value: int64(7)}, {Path: "c", Value: "new"}}
	for i := range files {
		files[i] = fmt.Appendf(nil, "# file %d\na:\n  b: %d\nc: old\n", i, i)
		var err error
		if wants[i], _, err = Set(files[i], edits, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	// Room for what four of the twelve files leave behind: each
	// goroutine's work evicts the others'.
	one := NewReadings()
	f, err := Parse(files[0], Options{Readings: one})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.SetRead(edits); err != nil {
		t.Fatal(err)
	}
	r := NewBoundedReadings(4 * one.Stats().Bytes)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for n := range 60 {
				i := (n*7 + g) % len(files)
				f, err := Parse(files[i], Options{Readings: r})
				if err != nil {
					errs <- err
					return
				}
				out, tree, err := f.SetRead(edits)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(out, wants[i]) {
					errs <- fmt.Errorf("file %d: got\n%s\nwant\n%s", i, out, wants[i])
					return
				}
				if m, ok := tree.(map[string]any); !ok || m["c"] != "new" {
					errs <- fmt.Errorf("file %d: Helm's reading %#v", i, tree)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if s := r.Stats(); s.Evictions == 0 || s.Bytes > 4*one.Stats().Bytes {
		t.Fatalf("the test should evict, and keep within the budget: %+v", s)
	}
}

// TestReadingsRememberParses checks Parse of bytes that parsed before with
// the same options leaves the yaml.v3 parse until it is needed, takes the
// document and root chosen before, and reads as a fresh parse does; other
// bytes or options are parsed afresh.
func TestReadingsRememberParses(t *testing.T) {
	r := NewReadings()
	data := []byte("a: 1\n---\nkind: HelmRelease\napiVersion: helm.toolkit.fluxcd.io/v2\nspec:\n  values:\n    a: 2 # c\n")
	zero, one := 0, 1
	parse := func(data []byte, opts Options) *File {
		t.Helper()
		opts.Readings = r
		f, err := Parse(data, opts)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, c := range []struct {
		name string
		opts Options
		want json.Number
		out  string
	}{
		{"document 0", Options{Document: &zero}, "1", "a: 3\n---\nkind: HelmRelease\napiVersion: helm.toolkit.fluxcd.io/v2\nspec:\n  values:\n    a: 2 # c\n"},
		{"document 1", Options{Document: &one, Root: "spec.values"}, "2", "a: 1\n---\nkind: HelmRelease\napiVersion: helm.toolkit.fluxcd.io/v2\nspec:\n  values:\n    a: 3 # c\n"},
		{"inline", Options{Inline: true}, "2", "a: 1\n---\nkind: HelmRelease\napiVersion: helm.toolkit.fluxcd.io/v2\nspec:\n  values:\n    a: 3 # c\n"},
	} {
		first := parse(data, c.opts)
		if first.doc == nil {
			t.Fatalf("%s: the first Parse left the parse for later", c.name)
		}
		before := r.Stats()
		again := parse(bytes.Clone(data), c.opts)
		if s := r.Stats(); s.Hits != before.Hits+2 || s.Misses != before.Misses {
			t.Fatalf("%s: the second Parse should take the parse and Helm's reading: %+v, before %+v", c.name, s, before)
		}
		if again.doc != nil {
			t.Fatalf("%s: the second Parse parsed with yaml.v3", c.name)
		}
		if again.index != first.index || !reflect.DeepEqual(again.root, first.root) || !reflect.DeepEqual(again.helm, first.helm) {
			t.Fatalf("%s: the second Parse chose document %d, root %v; the first %d, %v", c.name, again.index, again.root, first.index, first.root)
		}
		if v, err := again.Get("a"); err != nil || v != c.want {
			t.Fatalf("%s: a is %v (%v), want %v", c.name, v, err, c.want)
		}
		if again.doc != nil {
			t.Fatalf("%s: Get of a path without a selector parsed with yaml.v3", c.name)
		}
		for _, f := range []*File{first, again} {
			out, _, err := f.Set([]Edit{{Path: "a", Value: int64(3)}})
			if err != nil || string(out) != c.out {
				t.Fatalf("%s: got %q (%v), want %q", c.name, out, err, c.out)
			}
		}
	}
	// The caller's bytes change after Parse: the File does not.
	mine := bytes.Clone(data)
	f := parse(mine, Options{Document: &zero})
	mine[3] = '9'
	if v, _ := f.Get("a"); v != json.Number("1") {
		t.Fatalf("after the caller's bytes changed, a is %v", v)
	}
	if v, _ := parse(mine, Options{Document: &zero}).Get("a"); v != json.Number("9") {
		t.Fatalf("the changed bytes read as the old ones: a is %v", v)
	}
	// A file that does not parse fails each time and is not remembered;
	// Helm's reading of it (an error too) is.
	r = NewReadings()
	for range 2 {
		if _, err := Parse([]byte("a: [\n"), Options{Readings: r}); !errors.Is(err, ErrParse) {
			t.Fatalf("got %v, want ErrParse", err)
		}
	}
	if s := r.Stats(); s.Entries != 1 || s.Hits != 1 || s.Misses != 3 {
		t.Fatalf("a file that does not parse was remembered: %+v", s)
	}
}

// TestFileConcurrentSets edits one File from several goroutines, as the
// planner may when units share a values file that Readings handed out
// once: with -race it checks a File is not written after Parse.
func TestFileConcurrentSets(t *testing.T) {
	data := []byte("# shared\na:\n  b: 1 # c\n  l: [1, 2]\nenv:\n- name: TZ\n  value: UTC\nd: {}\n")
	r := NewReadings()
	if _, err := Parse(data, Options{Readings: r}); err != nil {
		t.Fatal(err)
	}
	// The second Parse leaves the yaml.v3 parse to the first edit: the
	// goroutines race to it.
	f, err := Parse(data, Options{Readings: r})
	if err != nil {
		t.Fatal(err)
	}
	if f.doc != nil {
		t.Fatal("the second Parse parsed with yaml.v3")
	}
	edits := [][]Edit{
		{{Path: "a.b", Value: int64(2)}},
		{{Path: "a.l[1]", Value: "x"}},
		{{Path: "env[name=TZ].value", Value: "CET"}},
		{{Path: "d.e", Value: true}, {Path: "a.b", Value: 1.5}},
		{{Path: "a.new", Value: nil}},
	}
	wants := make([][]byte, len(edits))
	for i, e := range edits {
		if wants[i], _, err = Set(data, e, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for n := range 20 {
				i := (g + n) % len(edits)
				out, _, err := f.SetRead(edits[i])
				if err == nil && !bytes.Equal(out, wants[i]) {
					err = fmt.Errorf("edits %d: got\n%s\nwant\n%s", i, out, wants[i])
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestReadingsLargeFile parses and edits a file larger than the budget:
// the results are those made without Readings, and nothing is kept.
func TestReadingsLargeFile(t *testing.T) {
	var b bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&b, "k%d: v # comment\n", i)
	}
	data := b.Bytes()
	edits := []Edit{{Path: "k7", Value: "w"}}
	want, _, err := Set(data, edits, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := NewBoundedReadings(int64(len(data)))
	for range 2 {
		f, err := Parse(data, Options{Readings: r})
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := f.SetRead(edits)
		if err != nil || !bytes.Equal(out, want) {
			t.Fatalf("got %v\n%s\nwant\n%s", err, out, want)
		}
	}
	if s := r.Stats(); s.Entries != 0 || s.Bytes != 0 || s.Hits != 0 {
		t.Fatalf("a file over the budget was kept: %+v", s)
	}
}

// A Set that changes nothing returns a copy of the File's bytes: the caller
// may change it, and the File, which Readings hands to every later edit of
// the same bytes, keeps its own.
func TestNoOpSetReturnsACopy(t *testing.T) {
	r := NewReadings()
	data := []byte("a: 1\nb: 2\n")
	if _, err := Parse(data, Options{Readings: r}); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(data, Options{Readings: r})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := f.Set([]Edit{{Path: "a", Value: int64(1)}})
	if err != nil || string(out) != string(data) {
		t.Fatalf("no-op Set: %q (%v)", out, err)
	}
	out[3] = '9'
	got, _, err := f.Set([]Edit{{Path: "b", Value: int64(3)}})
	if err != nil || string(got) != "a: 1\nb: 3\n" {
		t.Fatalf("Set after the caller changed a no-op's bytes: %q (%v)", got, err)
	}
}
