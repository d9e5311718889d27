package kustomize

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Written is one write-back's edit of one file.
type Written struct {
	// File is the repository path edited and Data its new bytes.
	File string
	Data []byte
	// Path is the path written in File's document (Helm's --set syntax),
	// for the receipt's writtenPath.
	Path string
	// Why names the source written, or the override and why.
	Why string
}

// Write writes live, the accepted value of a built field, at its source s
// in data (the bytes of s.File), with the values editor: only the edited
// tokens change. An image is written into its images: entry's newTag,
// digest or newName, whichever the new reference changes.
func Write(data []byte, s Source, old, live any) (Written, error) {
	w := Written{File: s.File, Path: s.Path, Why: s.Why}
	doc := s.Document
	opts := values.Options{Document: &doc}
	var edits []values.Edit
	switch {
	case s.Kind == KindImages:
		from, to := str(old), str(live)
		if to == "" {
			return w, fmt.Errorf("%s: an image reference must be a string, got %v", s.Why, live)
		}
		ie, err := imageEdits(from, to)
		if err != nil {
			return w, fmt.Errorf("%s: %w", s.Why, err)
		}
		for _, e := range ie {
			edits = append(edits, values.Edit{Path: s.Path + "." + e.key, Value: e.value})
		}
		if len(edits) == 1 {
			w.Path = edits[0].Path
		}
	case s.Kind == KindPostBuild:
		v, err := variableValue(s, live)
		if err != nil {
			return w, err
		}
		edits = []values.Edit{{Path: s.Path, Value: v}}
	case s.InlinePath != "":
		text, err := values.Get(data, s.Path, opts)
		if err != nil {
			return w, err
		}
		t, ok := text.(string)
		if !ok {
			return w, fmt.Errorf("%s: %s is not a patch's text", s.File, s.Path)
		}
		in := 0
		patched, _, err := values.Set(
			[]byte(t),
			[]values.Edit{{Path: s.InlinePath, Value: live}},
			values.Options{Document: &in},
		)
		if err != nil {
			return w, fmt.Errorf("%s: editing the inline patch %s: %w", s.File, s.Path, err)
		}
		edits = []values.Edit{{Path: s.Path, Value: string(patched)}}
	default:
		edits = []values.Edit{{Path: s.Path, Value: live}}
	}
	out, _, err := values.Set(data, edits, opts)
	if err != nil {
		return w, fmt.Errorf("%s: %w", s.File, err)
	}
	w.Data = out
	return w, nil
}

type imageEdit struct {
	key   string
	value any
}

// imageEdits are the images: entry keys that take from's reference to to,
// as kustomize's image transformer applies an entry: a newTag alone drops
// the reference's digest and a digest alone its tag, so a reference with
// both is written as both. A reference losing its tag or digest cannot be
// written as an entry (kustomize keeps what the entry does not replace).
func imageEdits(from, to string) ([]imageEdit, error) {
	split := func(ref string) (name, tag, digest string) {
		if i := strings.Index(ref, "@"); i >= 0 {
			ref, digest = ref[:i], ref[i+1:]
		}
		name = ref
		if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
			name, tag = ref[:i], ref[i+1:]
		}
		return
	}
	fn, ft, fd := split(from)
	tn, tt, td := split(to)
	var out []imageEdit
	if tn != fn {
		out = append(out, imageEdit{"newName", tn})
	}
	switch {
	case tt == ft && td == fd:
	case tt == "" && td == "":
		return nil, fmt.Errorf("an images: entry cannot take the tag or digest of %s away (to %s): %w",
			from, to, values.ErrRefused)
	case tt != "" && td != "":
		out = append(out, imageEdit{"newTag", tt}, imageEdit{"digest", td})
	case td != "":
		if ft != "" {
			return nil, fmt.Errorf("an images: entry cannot take the tag of %s away (to %s): %w",
				from, to, values.ErrRefused)
		}
		out = append(out, imageEdit{"digest", td})
	default:
		out = append(out, imageEdit{"newTag", tt})
	}
	return out, nil
}

// Override writes live for field of the object kind/name into the
// kustomization file of the unit's own overlay (data, the bytes of file)
// instead of the shared base its value comes from: a replicas: entry for
// spec.replicas, an images: entry for a container's image, otherwise a
// JSON 6902 patch the overlay lists. The entry is added after the list's
// last item (the key is added at the end when the overlay has none), so
// comments and order stay.
func Override(data []byte, file, kind, name, field string, old, live any, why string) (Written, error) {
	w := Written{File: file, Why: why}
	var key string
	var item map[string]any
	switch {
	case field == "spec.replicas":
		key, item = "replicas", map[string]any{"name": name, "count": live}
	case imageField.MatchString(field) && str(old) != "" && str(live) != "":
		key, item = "images", map[string]any{"name": imageName(str(old))}
		ie, err := imageEdits(str(old), str(live))
		if err != nil {
			return w, fmt.Errorf("%s: %w", file, err)
		}
		for _, e := range ie {
			item[e.key] = e.value
		}
	default:
		return OverridePatch(data, file, kind, name, field, live, why)
	}
	return appendOverride(w, data, key, item)
}

// OverridePatch writes live for field of the object kind/name into the
// kustomization file of the unit's own overlay as a JSON 6902 patch the
// overlay lists, whatever the field: for an image whose images: entry
// would also change other objects' containers (SharedImage).
func OverridePatch(data []byte, file, kind, name, field string, live any, why string) (Written, error) {
	w := Written{File: file, Why: why}
	segs, err := yamlnode.ParsePath(field)
	if err != nil {
		return w, err
	}
	v, err := json.Marshal(live)
	if err != nil {
		return w, err
	}
	return appendOverride(w, data, "patches", map[string]any{
		"target": map[string]any{"kind": kind, "name": name},
		"patch":  fmt.Sprintf("- op: replace\n  path: %s\n  value: %s", pointer(segs), v),
	})
}

// SharedImage reports whether a container of another object of the build,
// or another container of the same object, holds an image of the same name
// as field of object: an images: entry for it would change those too.
func SharedImage(b *Build, object, field string) bool {
	name := imageName(str(builtField(b, object, field)))
	if name == "" {
		return false
	}
	for key, obj := range b.Rendering.Objects {
		if raw, ok := b.Raw[key]; ok {
			obj = raw
		}
		shared := false
		var walk func(v any, at string)
		walk = func(v any, at string) {
			switch x := v.(type) {
			case map[string]any:
				for k, c := range x {
					walk(c, yamlnode.Join(at, yamlnode.EscapeKey(k)))
				}
			case []any:
				for i, c := range x {
					walk(c, yamlnode.Index(at, i))
				}
			case string:
				if imageField.MatchString(at) && imageName(x) == name && (key != object || at != field) {
					shared = true
				}
			}
		}
		walk(obj, "")
		if shared {
			return true
		}
	}
	return false
}

// builtField is field of object in the build, before substitution.
func builtField(b *Build, object, field string) any {
	obj := b.Rendering.Objects[object]
	if raw, ok := b.Raw[object]; ok {
		obj = raw
	}
	segs, err := yamlnode.ParsePath(field)
	if err != nil {
		return nil
	}
	v, _ := yamlnode.Lookup(obj, segs)
	return v
}

// appendOverride adds item to the list key of the overlay's kustomization
// file.
func appendOverride(w Written, data []byte, key string, item map[string]any) (Written, error) {
	file := w.File
	out, index, err := appendItem(data, key, item)
	if err != nil {
		return w, fmt.Errorf("%s: %w", file, err)
	}
	w.Data, w.Path = out, fmt.Sprintf("%s[%d]", key, index)
	return w, nil
}

// appendItem adds item at the end of the top-level block sequence key of
// a kustomization file, or key with item at the end of the file, and
// verifies that the file reads as before with the item added.
func appendItem(data []byte, key string, item map[string]any) ([]byte, int, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, 0, err
	}
	if len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode || root.Content[0].Style&yaml.FlowStyle != 0 {
		return nil, 0, fmt.Errorf("a kustomization must be a block mapping to add %s to", key)
	}
	top := root.Content[0]
	lines := bytes.SplitAfter(data, []byte("\n"))
	lineStart := func(n int) int { // 1-based line -> offset
		off := 0
		for i := 0; i < n-1 && i < len(lines); i++ {
			off += len(lines[i])
		}
		return off
	}
	body, err := sigsyaml.Marshal([]any{item})
	if err != nil {
		return nil, 0, err
	}
	var out []byte
	index := 0
	found := -1
	for i := 0; i < len(top.Content); i += 2 {
		if top.Content[i].Value == key {
			found = i
		}
	}
	switch {
	case found < 0:
		out = append([]byte{}, data...)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		out = append(append(out, key+":\n"...), body...)
	default:
		seq := top.Content[found+1]
		if seq.Kind != yaml.SequenceNode || seq.Style&yaml.FlowStyle != 0 || len(seq.Content) == 0 {
			return nil, 0, fmt.Errorf("%s: want a block list to add an entry to", key)
		}
		index = len(seq.Content)
		indent := seq.Content[0].Column - 3 // "- " before the item's first key
		if indent < 0 {
			indent = 0
		}
		var text strings.Builder
		for _, l := range strings.SplitAfter(string(body), "\n") {
			if l != "" {
				text.WriteString(strings.Repeat(" ", indent) + l)
			}
		}
		at := len(data)
		if found+2 < len(top.Content) {
			next := top.Content[found+2].Line
			// Blank and comment lines right above the next key are its.
			for next > 1 {
				l := strings.TrimSpace(string(lines[next-2]))
				if l != "" && !strings.HasPrefix(l, "#") {
					break
				}
				next--
			}
			at = lineStart(next)
		}
		out = append(append([]byte{}, data[:at]...), []byte(text.String())...)
		if at > 0 && data[at-1] != '\n' {
			out = append(append([]byte{}, data[:at]...), '\n')
			out = append(out, text.String()...)
		}
		out = append(out, data[at:]...)
	}
	if err := verifyAppend(data, out, key, item); err != nil {
		return nil, 0, err
	}
	return out, index, nil
}

// verifyAppend checks that after reads as before with item appended to key.
func verifyAppend(before, after []byte, key string, item map[string]any) error {
	var b, a map[string]any
	if err := sigsyaml.Unmarshal(before, &b); err != nil {
		return err
	}
	if err := sigsyaml.Unmarshal(after, &a); err != nil {
		return fmt.Errorf("the override does not parse: %w", err)
	}
	if b == nil {
		b = map[string]any{}
	}
	list, _ := b[key].([]any)
	var want any
	raw, _ := json.Marshal(item)
	if err := json.Unmarshal(raw, &want); err != nil {
		return err
	}
	b[key] = append(list, want)
	if !reflect.DeepEqual(normal(b), normal(a)) {
		return fmt.Errorf("adding the %s entry would change more than the entry: %w", key, values.ErrRefused)
	}
	return nil
}

// normal reads a tree back through JSON, so numbers compare as numbers.
func normal(v any) any {
	raw, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}
