package values

import (
	"encoding/json"
	"fmt"
	"slices"

	yaml "go.yaml.in/yaml/v3"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// parseEditPath reads a path of the editor: Helm's --set syntax plus kyaml's
// `[key=value]` list selector (yamlnode.ParseSelectorPath).
func parseEditPath(path string) ([]yamlnode.Segment, error) {
	return yamlnode.ParseSelectorPath(path)
}

// resolveSelectors replaces every `[key=value]` selector of path with the
// index of the one list item it names, found with kyaml's MatchField on the
// item's mapping. Helm's reader must agree: it must read exactly one item
// of that list with key set to value, at the same index. A selector that
// matches no item is ErrNotFound (wrapped in ErrSelector); one that matches
// several, or that Helm reads otherwise, is refused with ErrSelector.
func (d *document) resolveSelectors(path []yamlnode.Segment, helm any) ([]yamlnode.Segment, error) {
	if !slices.ContainsFunc(path, func(s yamlnode.Segment) bool { return s.AnyIndex }) {
		return path, nil // nothing to resolve: the path as it is
	}
	var out []yamlnode.Segment
	for i, seg := range path {
		if !seg.AnyIndex {
			out = append(out, seg)
			continue
		}
		where := yamlnode.FormatPath(path[:i+1])
		loc, err := d.locate(out)
		if err != nil {
			return nil, err
		}
		list := loc.node
		if list == nil {
			return nil, fmt.Errorf("%s: the list is not there: %w", where, ErrNotFound)
		}
		if list.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("%s (line %d) is not a list: %w", where, d.line(list), ErrThroughScalar)
		}
		found := -1
		for j, item := range list.Content {
			m, err := kyaml.NewRNode(item).Pipe(kyaml.MatchField(seg.MergeKey, seg.MergeValue))
			if err != nil || m == nil {
				continue // not a mapping, or not this item
			}
			if found >= 0 {
				return nil, fmt.Errorf(
					"%s (lines %d and %d): two items have %s=%s: %w",
					where,
					d.line(list.Content[found]),
					d.line(item),
					seg.MergeKey,
					seg.MergeValue,
					ErrSelector,
				)
			}
			found = j
		}
		if found < 0 {
			return nil, fmt.Errorf(
				"%s (line %d): no item has %s=%s: %w: %w",
				where,
				d.line(list),
				seg.MergeKey,
				seg.MergeValue,
				ErrSelector,
				ErrNotFound,
			)
		}
		if got := helmMatches(helm, out, seg); len(got) != 1 || got[0] != found {
			return nil, fmt.Errorf(
				"%s (line %d): Helm reads items %v with %s=%s, the editor item %d: %w",
				where,
				d.line(list.Content[found]),
				got,
				seg.MergeKey,
				seg.MergeValue,
				found,
				ErrSelector,
			)
		}
		out = append(out, yamlnode.Segment{Index: found, IsIndex: true})
	}
	return out, nil
}

// helmMatches lists the indexes of the items of the list at path, as Helm
// reads it, whose mapping has seg.MergeKey set to the text seg.MergeValue.
func helmMatches(helm any, path []yamlnode.Segment, seg yamlnode.Segment) []int {
	v, ok := lookupValue(helm, path)
	if !ok {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	var idx []int
	for i, item := range list {
		m, ok := normalize(item).(map[string]any)
		if !ok {
			continue
		}
		switch f := m[seg.MergeKey].(type) {
		case string:
			if f == seg.MergeValue {
				idx = append(idx, i)
			}
		case json.Number:
			if f.String() == seg.MergeValue {
				idx = append(idx, i)
			}
		}
	}
	return idx
}
