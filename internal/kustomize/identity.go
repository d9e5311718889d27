package kustomize

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// identity is an object as one step of a kustomization sees it: the ids
// kustomize keeps for it (the resource file's first, the current last,
// the names and namespaces namespace:, namePrefix: and nameSuffix: gave
// it between), and its labels and annotations at that step.
type identity struct {
	ids                 []resid.ResId
	labels, annotations map[string]string
}

func (i identity) org() resid.ResId { return i.ids[0] }
func (i identity) cur() resid.ResId { return i.ids[len(i.ids)-1] }

// seen is the object as one kustomization of the chain sees it: before
// its namespace:, namePrefix: and nameSuffix: (its patchesStrategicMerge
// and patches) and after them (its patchesJson6902, replicas, images and
// replacements), kustomize's order of a kustomization's transformers.
type seen struct{ before, after identity }

// skipsAffixes are the kinds namePrefix and nameSuffix leave alone, as
// kustomize's prefix and suffix transformers list them.
var skipsAffixes = []resid.Gvk{
	{Kind: "CustomResourceDefinition"},
	{Group: "apiregistration.k8s.io", Kind: "APIService"},
	{Kind: "Namespace"},
}

// replicasKinds are the kinds kustomize's replicas: entries set.
var replicasKinds = []string{"Deployment", "ReplicationController", "ReplicaSet", "StatefulSet"}

// gvkOf is the group, version and kind of an object.
func gvkOf(m map[string]any) resid.Gvk {
	g, v := resid.ParseGroupVersion(str(m["apiVersion"]))
	return resid.NewGvk(g, v, str(m["kind"]))
}

// original finds the document of the resource file that kustomize built
// into obj: the one of obj's kind that the chain's namespace:, namePrefix:
// and nameSuffix: (innermost first) turn into obj's name and namespace.
// It returns the document's index and how each kustomization of the chain
// (outermost first, as chain lists them) sees the object.
func original(data []byte, file string, chain []*Kustomization, obj map[string]any) (int, []seen, error) {
	gvk := gvkOf(obj)
	name, ns := str(meta(obj)["name"]), str(meta(obj)["namespace"])
	for i, d := range yamlnode.SplitDocuments(data) {
		var m map[string]any
		if sigsyaml.Unmarshal(data[d.Start:d.End], &m) != nil || m == nil || str(m["kind"]) != gvk.Kind {
			continue
		}
		levels := through(chain, gvk, m, obj)
		last := levels[0].after.cur()
		if last.Name == name && last.Namespace == ns {
			return i, levels, nil
		}
	}
	var renames []string
	for _, k := range chain {
		if k.Namespace != "" || k.NamePrefix != "" || k.NameSuffix != "" {
			renames = append(renames, k.File)
		}
	}
	how := ""
	if len(renames) > 0 {
		how = " after the namespace:, namePrefix: and nameSuffix: of " + strings.Join(renames, ", ")
	}
	return 0, nil, fmt.Errorf("%s: no document is %s %s in namespace %q%s", file, gvk.Kind, name, ns, how)
}

// through follows doc up the chain (outermost first) as kustomize renames
// it, each kustomization after those it builds on.
func through(chain []*Kustomization, gvk resid.Gvk, doc, built map[string]any) []seen {
	ids := []resid.ResId{resid.NewResIdWithNamespace(gvk, str(meta(doc)["name"]), str(meta(doc)["namespace"]))}
	add := func(name, ns string) {
		id := resid.NewResIdWithNamespace(gvk, name, ns)
		if id != ids[len(ids)-1] {
			ids = append(ids, id)
		}
	}
	skip := slices.ContainsFunc(skipsAffixes, func(s resid.Gvk) bool { return gvk.IsSelected(&s) })
	var labelSetters, annotationSetters []map[string]string
	for _, k := range slices.Backward(chain) {
		labelSetters = append(labelSetters, labelPairs(k))
		annotationSetters = append(annotationSetters, k.CommonAnnotations)
	}
	builtLabels, builtAnnotations := strMap(meta(built)["labels"]), strMap(meta(built)["annotations"])
	docLabels, docAnnotations := strMap(meta(doc)["labels"]), strMap(meta(doc)["annotations"])
	at := func(n int) identity {
		return identity{
			ids:         slices.Clone(ids),
			labels:      setBefore(builtLabels, docLabels, labelSetters, n),
			annotations: setBefore(builtAnnotations, docAnnotations, annotationSetters, n),
		}
	}
	out := make([]seen, len(chain))
	for n := range chain {
		k := chain[len(chain)-1-n]
		var s seen
		s.before = at(n)
		cur := ids[len(ids)-1]
		name, ns := cur.Name, cur.Namespace
		if k.Namespace != "" && !gvk.IsClusterScoped() {
			ns = k.Namespace
			add(name, ns)
		}
		if !skip && (k.NamePrefix != "" || k.NameSuffix != "") {
			add(k.NamePrefix+name+k.NameSuffix, ns)
		}
		s.after = at(n + 1)
		out[len(chain)-1-n] = s
	}
	return out
}

// labelPairs are the labels a kustomization's commonLabels and labels set.
func labelPairs(k *Kustomization) map[string]string {
	out := maps.Clone(k.CommonLabels)
	for _, l := range k.Labels {
		if out == nil {
			out = map[string]string{}
		}
		maps.Copy(out, l.Pairs)
	}
	return out
}

// setBefore is an object's labels (or annotations) before the setters
// from the n-th on (innermost first) ran: the built ones, less those later
// setters set, which hold the earlier setters' value or the resource
// file's. A patch changing labels is not followed.
func setBefore(built, doc map[string]string, setters []map[string]string, n int) map[string]string {
	out := maps.Clone(built)
	if out == nil {
		out = map[string]string{}
	}
	for _, later := range setters[n:] {
		for key := range later {
			delete(out, key)
			if v, ok := doc[key]; ok {
				out[key] = v
			}
			for _, earlier := range setters[:n] {
				if v, ok := earlier[key]; ok {
					out[key] = v
				}
			}
		}
	}
	return out
}

func strMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// selects reports whether kustomize's target selection picks the object
// seen as id: its name and namespace matched (anchored regular
// expressions) against the resource file's or the current ones, its group,
// version and kind against the current ones, and its labels and
// annotations against the selector's label and annotation selectors. A
// selector kustomize cannot read selects nothing: kustomize's build would
// have failed on it.
func selects(s *types.Selector, id identity) bool {
	sr, err := types.NewSelectorRegex(s)
	if err != nil {
		return false
	}
	org, cur := id.org(), id.cur()
	if !sr.MatchNamespace(org.EffectiveNamespace()) && !sr.MatchNamespace(cur.EffectiveNamespace()) {
		return false
	}
	if !sr.MatchName(org.Name) && !sr.MatchName(cur.Name) {
		return false
	}
	if !sr.MatchGvk(cur.Gvk) {
		return false
	}
	return matchesSet(s.LabelSelector, id.labels) && matchesSet(s.AnnotationSelector, id.annotations)
}

func matchesSet(selector string, set map[string]string) bool {
	sel, err := labels.Parse(selector)
	return err == nil && sel.Matches(labels.Set(set))
}

// named reports whether any id kustomize keeps for the object has name, as
// a replicas: entry is matched.
func named(id identity, name string) bool {
	return slices.ContainsFunc(id.ids, func(r resid.ResId) bool { return r.Name == name })
}

// patches reports whether a strategic-merge patch document without a
// target is the object seen as id: kustomize matches the patch's kind,
// name and namespace (and its group and version) against every id it
// keeps for the object.
func patches(doc map[string]any, id identity) bool {
	cur := id.cur()
	gvk := gvkOf(doc)
	if gvk.Kind != cur.Kind || (str(doc["apiVersion"]) != "" && (gvk.Group != cur.Group || gvk.Version != cur.Version)) {
		return false
	}
	want := resid.NewResIdWithNamespace(cur.Gvk, str(meta(doc)["name"]), str(meta(doc)["namespace"]))
	return slices.ContainsFunc(id.ids, func(r resid.ResId) bool {
		return r.Name == want.Name && r.EffectiveNamespace() == want.EffectiveNamespace()
	})
}
