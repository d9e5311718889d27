package confighubtest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/backflow-dev/backflow/internal/yamlnode"
	yaml "go.yaml.in/yaml/v3"
)

// resourceInfo is the API's ResourceInfo of a Kubernetes resource.
type resourceInfo struct {
	ResourceCategory         string `json:"ResourceCategory"`
	ResourceType             string `json:"ResourceType"`
	ResourceName             string `json:"ResourceName"`
	ResourceNameWithoutScope string `json:"ResourceNameWithoutScope"`
}

// pathChange is the API's PathChange.
type pathChange struct {
	ChangeType  string `json:"ChangeType"`
	Path        string `json:"Path"`
	DisplayPath string `json:"DisplayPath"`
	FromValue   string `json:"FromValue,omitempty"`
	ToValue     string `json:"ToValue,omitempty"`
}

// resourceDiff is the API's ResourceDiff (without ChangeType and
// Attribution, which the stand-in does not report).
type resourceDiff struct {
	Resource  resourceInfo `json:"Resource"`
	Changes   []pathChange `json:"Changes,omitempty"`
	FromValue string       `json:"FromValue,omitempty"`
	ToValue   string       `json:"ToValue,omitempty"`
}

type resource struct {
	info resourceInfo
	tree any
	text string
}

// readResources reads a stream of manifests into its resources, in order.
func readResources(data []byte) ([]resource, error) {
	var out []resource
	seen := map[string]bool{}
	for i, doc := range yamlnode.SplitDocuments(data) {
		if doc.Empty {
			continue
		}
		var v any
		if err := yaml.Unmarshal(data[doc.Start:doc.End], &v); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("document %d is not a mapping", i)
		}
		str := func(x any) string { s, _ := x.(string); return s }
		md, _ := m["metadata"].(map[string]any)
		apiVersion, kind, name, ns := str(m["apiVersion"]), str(m["kind"]), str(md["name"]), str(md["namespace"])
		if apiVersion == "" || kind == "" || name == "" {
			return nil, fmt.Errorf("document %d has no apiVersion, kind or metadata.name", i)
		}
		info := resourceInfo{ResourceCategory: "Resource", ResourceType: apiVersion + "/" + kind,
			ResourceName: ns + "/" + name, ResourceNameWithoutScope: name}
		key := info.ResourceType + " " + info.ResourceName
		if seen[key] {
			return nil, fmt.Errorf("document %d repeats %s %s", i, info.ResourceType, info.ResourceName)
		}
		seen[key] = true
		out = append(out, resource{info: info, tree: v, text: string(data[doc.Start:doc.End])})
	}
	return out, nil
}

// diffManifests is what changed from one stream of manifests to the next,
// resource by resource in the new stream's order (then the removed ones),
// path by path: maps by key in sorted order, lists by index.
func diffManifests(from, to []byte) ([]resourceDiff, error) {
	a, err := readResources(from)
	if err != nil {
		return nil, err
	}
	b, err := readResources(to)
	if err != nil {
		return nil, err
	}
	key := func(r resource) string { return r.info.ResourceType + " " + r.info.ResourceName }
	old := map[string]resource{}
	for _, r := range a {
		old[key(r)] = r
	}
	out := []resourceDiff{}
	kept := map[string]bool{}
	for _, r := range b {
		prev, ok := old[key(r)]
		if !ok {
			out = append(out, resourceDiff{Resource: r.info, ToValue: r.text})
			continue
		}
		kept[key(r)] = true
		var changes []pathChange
		diffTree(nil, prev.tree, r.tree, &changes)
		if len(changes) > 0 {
			out = append(out, resourceDiff{Resource: r.info, Changes: changes})
		}
	}
	for _, r := range a {
		if !kept[key(r)] {
			out = append(out, resourceDiff{Resource: r.info, FromValue: r.text})
		}
	}
	return out, nil
}

func joinPath(p []string) string { return strings.Join(p, ".") }

// valueText is a scalar's text, or a YAML block for a map or list.
func valueText(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case map[string]any, []any:
		data, err := yaml.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(data)
	default:
		return fmt.Sprint(x)
	}
}

func diffTree(path []string, a, b any, out *[]pathChange) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted)
		for _, k := range sorted {
			p := append(slices.Clone(path), k)
			av, ina := am[k]
			bv, inb := bm[k]
			switch {
			case !ina:
				*out = append(*out, pathChange{
					ChangeType: "Add", Path: joinPath(p),
					DisplayPath: joinPath(p), ToValue: valueText(bv),
				})
			case !inb:
				*out = append(*out, pathChange{
					ChangeType: "Delete", Path: joinPath(p),
					DisplayPath: joinPath(p), FromValue: valueText(av),
				})
			default:
				diffTree(p, av, bv, out)
			}
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok {
		for i := range max(len(al), len(bl)) {
			p := append(slices.Clone(path), strconv.Itoa(i))
			switch {
			case i >= len(al):
				*out = append(*out, pathChange{
					ChangeType: "Add", Path: joinPath(p),
					DisplayPath: joinPath(p), ToValue: valueText(bl[i]),
				})
			case i >= len(bl):
				*out = append(*out, pathChange{
					ChangeType: "Delete", Path: joinPath(p),
					DisplayPath: joinPath(p), FromValue: valueText(al[i]),
				})
			default:
				diffTree(p, al[i], bl[i], out)
			}
		}
		return
	}
	if fmt.Sprintf("%T|%v", a, a) != fmt.Sprintf("%T|%v", b, b) {
		*out = append(*out, pathChange{
			ChangeType: "Update", Path: joinPath(path),
			DisplayPath: joinPath(path), FromValue: valueText(a), ToValue: valueText(b),
		})
	}
}
