package helmvalues_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/helmvalues"
)

// corpus reads, with Helm's own values reader, the real charts' values
// files of the corpus and the shared charts' values files, by name.
func corpus(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for p, data := range corpusFiles(t) {
		v, err := loader.LoadValues(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[p] = v
	}
	return out
}

// corpusFiles are the corpus's and the shared charts' values files, by name.
func corpusFiles(t *testing.T) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "corpus", "values", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	charts, err := filepath.Glob(filepath.Join("..", "..", "testdata", "charts", "*", "values*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, charts...)
	if len(paths) < 17 {
		t.Fatalf("found %d values files, want the corpus and the shared charts", len(paths))
	}
	out := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = data
	}
	return out
}

// pairs are the ordered pairs of files the tests layer: each file over
// itself, over the next file and under it, which puts every file both
// under and over another chart's values.
func pairs(files map[string]map[string]any) [][2]string {
	ns := names(files)
	var out [][2]string
	for i, a := range ns {
		b := ns[(i+1)%len(ns)]
		out = append(out, [2]string{a, a}, [2]string{a, b}, [2]string{b, a})
	}
	return out
}

func names(files map[string]map[string]any) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	})
}

// copyTree deep-copies a tree through JSON (Helm's trees are JSON's).
func copyTree(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// nulled is v with a null put at every third key of every mapping, and a
// null under a key v does not have, nested and at the top: the places
// where Helm's null rule has something to decide.
func nulled(v map[string]any) map[string]any {
	out := map[string]any{"backflowAbsent": nil, "backflowAbsentTable": map[string]any{"a": nil, "b": 1.0}}
	for i, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range v {
			if !yield(k) {
				return
			}
		}
	}) {
		switch x := v[k].(type) {
		case map[string]any:
			out[k] = nulled(x)
		default:
			if i%3 == 0 {
				out[k] = nil
			} else {
				out[k] = x
			}
		}
	}
	return out
}

// withoutNulls is Helm's coalesced values with the null values it keeps
// (where the chart has no default to delete) taken out: what the trees say
// is not there.
func withoutNulls(v map[string]any) map[string]any {
	out := map[string]any{}
	for k, e := range v {
		switch x := e.(type) {
		case nil:
		case map[string]any:
			out[k] = withoutNulls(x)
		default:
			out[k] = x
		}
	}
	return out
}

// Layer is Helm's layering of -f files, the SDK's loader.MergeMaps, on
// pairs of the corpus's and the shared charts' values files,
// with and without nulls.
func TestLayerIsHelmsMergeMaps(t *testing.T) {
	files := corpus(t)
	for _, p := range pairs(files) {
		a, b := p[0], p[1]
		for _, top := range []map[string]any{files[b], nulled(files[b])} {
			want := loader.MergeMaps(copyTree(t, files[a]), copyTree(t, top))
			if got := helmvalues.Layer(files[a], top); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s then %s: Layer differs from Helm's MergeMaps", a, b)
			}
		}
	}
}

// Merge is what Helm's coalescing leaves: with the earlier file as a
// chart's defaults and the later one as the user's values, the SDK's
// CoalesceValues gives the same values, once the nulls it keeps for keys
// the chart has no default for are read as what they are, no value.
func TestMergeIsHelmsCoalescing(t *testing.T) {
	files := corpus(t)
	for _, p := range pairs(files) {
		a, b := p[0], p[1]
		for _, top := range []map[string]any{files[b], nulled(files[b])} {
			ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "corpus", Version: "1.0.0"}, Values: copyTree(t, files[a])}
			helm, err := util.CoalesceValues(ch, copyTree(t, top))
			if err != nil {
				t.Fatal(err)
			}
			before := copyTree(t, top)
			got := helmvalues.Merge(files[a], top)
			if want := withoutNulls(helm); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s then %s: Merge differs from Helm's coalescing", a, b)
			}
			if !reflect.DeepEqual(before, copyTree(t, top)) {
				t.Fatalf("%s then %s: Merge changed its input", a, b)
			}
		}
	}
}

// retyped is v with its numbers as other readers give them: integral ones
// as int64 and int, the others as undecoded JSON numbers.
func retyped(v any, n *int) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = retyped(e, n)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = retyped(e, n)
		}
		return out
	case float64:
		*n++
		switch {
		case x == math.Trunc(x) && math.Abs(x) < 1<<53 && *n%2 == 0:
			return int64(x)
		case x == math.Trunc(x) && math.Abs(x) < 1<<31:
			return int(x)
		default:
			return json.Number(strconv.FormatFloat(x, 'g', -1, 64))
		}
	}
	return v
}

// Typed gives every number of a tree the type Helm's reader gives it,
// whatever reader made the tree: on the corpus, a tree whose numbers were
// made int64, int or JSON numbers is typed back to exactly what Helm read.
func TestTypedIsHelmsReader(t *testing.T) {
	files := corpus(t)
	total := 0
	for _, name := range names(files) {
		n := 0
		other := retyped(files[name], &n)
		total += n
		if got := helmvalues.Typed(other); !reflect.DeepEqual(got, any(files[name])) {
			t.Errorf("%s: Typed differs from Helm's reader", name)
		}
		if got := helmvalues.Typed(files[name]); !reflect.DeepEqual(got, any(files[name])) {
			t.Errorf("%s: Typed changed what Helm read", name)
		}
	}
	if total < 100 {
		t.Fatalf("the corpus held %d numbers, too few to say anything", total)
	}
}

// Plain keeps the numbers Helm reads: on the corpus, read with numbers as
// JSON numbers (as the planner's and the renderer's readers have them),
// Plain's tree holds integers as int64 and the rest as float64, and typed
// as Helm's reader types numbers it is exactly what Helm read.
func TestPlainIsHelmsNumbers(t *testing.T) {
	helm := corpus(t)
	ints, floats := 0, 0
	for name, data := range corpusFiles(t) {
		var v map[string]any
		if err := yaml.Unmarshal(data, &v, func(d *json.Decoder) *json.Decoder { d.UseNumber(); return d }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := helmvalues.Plain(v)
		helmvalues.Map(got, func(s any) any {
			switch s.(type) {
			case int64:
				ints++
			case float64:
				floats++
			case json.Number:
				t.Errorf("%s: Plain left the JSON number %v", name, s)
			}
			return s
		})
		if !reflect.DeepEqual(helmvalues.Typed(got), any(helm[name])) {
			t.Errorf("%s: Plain's numbers are not the numbers Helm read", name)
		}
	}
	if ints < 100 || floats == 0 {
		t.Fatalf("the corpus held %d integers and %d other numbers, too few to say anything", ints, floats)
	}
}
