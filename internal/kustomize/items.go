package kustomize

import (
	"reflect"

	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// inDocument finds a built field in a source document (a strategic-merge
// patch or the object's document in its resource file) as kustomize merges
// the two: a list item of the built object is the document's item with the
// same merge key (the key the object's OpenAPI schema gives the list; for a
// kind kustomize has no schema of, "name" when every item has one, as
// kustomize's merge does), and an item of a list without a key is the
// document's item at the same index (a patch replaces such a list whole).
// It returns the field's path in the document and its value there, false
// when the document does not hold it, and key set when the field is the
// merge key of its list item.
func inDocument(doc, built map[string]any, segs []yamlnode.Segment) (
	out []yamlnode.Segment, value any, key string, ok bool,
) {
	schema := openapi.SchemaForResourceType(kyaml.TypeMeta{APIVersion: str(built["apiVersion"]), Kind: str(built["kind"])})
	var d, b any = doc, built
	for i, s := range segs {
		if !s.IsIndex {
			dm, isMap := d.(map[string]any)
			if !isMap {
				return nil, nil, "", false
			}
			if d, ok = dm[s.Key]; !ok {
				return nil, nil, "", false
			}
			bm, _ := b.(map[string]any)
			b = bm[s.Key]
			if schema != nil {
				schema = schema.Field(s.Key)
			}
			out = append(out, s)
			continue
		}
		dl, isList := d.([]any)
		if !isList {
			return nil, nil, "", false
		}
		bl, _ := b.([]any)
		var item any
		if s.Index < len(bl) {
			item = bl[s.Index]
		}
		j := -1
		if k := mergeKey(schema, bl, dl); k != "" {
			im, _ := item.(map[string]any)
			v, has := im[k]
			for n, x := range dl {
				if xm, _ := x.(map[string]any); has && xm != nil && reflect.DeepEqual(normal(xm[k]), normal(v)) {
					j = n
					break
				}
			}
			if i+2 == len(segs) && !segs[i+1].IsIndex && segs[i+1].Key == k {
				key = k
			}
		} else if s.Index < len(dl) {
			j = s.Index
		}
		if j < 0 {
			return nil, nil, "", false
		}
		d, b = dl[j], item
		if schema != nil {
			schema = elements(schema)
		}
		out = append(out, yamlnode.Segment{Index: j, IsIndex: true})
	}
	return out, d, key, true
}

// mergeKey is the key kustomize's strategic merge matches a list's items
// by: the schema's patch merge key, or, without a schema, "name" when
// every item of both lists is a mapping holding one.
func mergeKey(schema *openapi.ResourceSchema, lists ...[]any) string {
	if schema != nil {
		_, k := schema.PatchStrategyAndKey()
		return k
	}
	n := 0
	for _, l := range lists {
		for _, x := range l {
			m, _ := x.(map[string]any)
			if _, ok := m["name"]; !ok {
				return ""
			}
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return "name"
}

// elements is the schema of a list's items, nil when it has none.
func elements(s *openapi.ResourceSchema) *openapi.ResourceSchema {
	if s == nil || s.Schema == nil {
		return nil
	}
	return s.Elements()
}
