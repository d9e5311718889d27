package observe

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// This file reads what an object's managedFields say changed live: a field
// owned by a manager other than the GitOps controllers (and other than the
// ignored managers) was set by someone else. A field owned by a GitOps
// controller too holds the value the controller applied, so it has
// converged.

// LiveResult is what managedFields say of one object.
type LiveResult struct {
	// Fields were set by a manager other than the GitOps and ignored
	// managers, and are not co-owned by a GitOps manager: live changes.
	Fields []Field
	// GitOps are the fields a GitOps manager owns (alone or with others),
	// by path, with that manager.
	GitOps map[string]Field

	byPath map[string]bool
}

// ignoredPaths are fields that are never live changes: the intent
// annotation says why a change was made and is not one itself, kubectl's
// last-applied record is bookkeeping, and status is not desired state.
var ignoredPaths = []string{
	"metadata.annotations." + yamlnode.EscapeKey(IntentAnnotation),
	"metadata.annotations." + yamlnode.EscapeKey("kubectl.kubernetes.io/last-applied-configuration"),
	// A hold's annotations (internal/hold) keep the forward controller off
	// an accepted change; they are backflow's bookkeeping, not a change.
	"metadata.annotations." + yamlnode.EscapeKey("backflow.dev/hold"),
	"metadata.annotations." + yamlnode.EscapeKey("kustomize.toolkit.fluxcd.io/reconcile"),
	"metadata.annotations." + yamlnode.EscapeKey("helm.toolkit.fluxcd.io/driftDetection"),
}

// LiveChanges reads an object's managedFields: which fields a manager other
// than gitops and ignore set, with their live values, and which fields a
// GitOps manager owns.
func LiveChanges(obj map[string]any, gitops, ignore []string) (LiveResult, error) {
	res := LiveResult{GitOps: map[string]Field{}, byPath: map[string]bool{}}
	entries, err := managedFields(obj)
	if err != nil {
		return res, err
	}
	type owner struct {
		manager, subresource string
		at                   time.Time
		gitops               bool
	}
	owners := map[string][]owner{}
	var order []string
	for i, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			return res, fmt.Errorf("metadata.managedFields[%d]: want a mapping", i)
		}
		manager, _ := m["manager"].(string)
		sub, _ := m["subresource"].(string)
		if sub == "status" || contains(ignore, manager) {
			continue
		}
		if ft, _ := m["fieldsType"].(string); ft != "" && ft != "FieldsV1" {
			return res, fmt.Errorf("metadata.managedFields[%d]: fieldsType %q: want FieldsV1", i, ft)
		}
		var at time.Time
		if ts, _ := m["time"].(string); ts != "" {
			if at, err = time.Parse(time.RFC3339, ts); err != nil {
				return res, fmt.Errorf("metadata.managedFields[%d].time: %w", i, err)
			}
		}
		fv, _ := m["fieldsV1"].(map[string]any)
		var paths []string
		if err := walkFieldsV1(fv, obj, nil, &paths); err != nil {
			return res, fmt.Errorf("metadata.managedFields[%d] (%s): %w", i, manager, err)
		}
		for _, p := range paths {
			if _, ok := owners[p]; !ok {
				order = append(order, p)
			}
			owners[p] = append(owners[p], owner{manager: manager, subresource: sub, at: at, gitops: contains(gitops, manager)})
		}
	}
	for _, p := range order {
		if contains(ignoredPaths, p) || p == "status" || strings.HasPrefix(p, "status.") ||
			strings.HasPrefix(p, "metadata.managedFields") {
			continue
		}
		segs, err := fieldSegs(p)
		if err != nil {
			continue
		}
		live, found := yamlnode.Lookup(obj, segs)
		if !found {
			continue
		}
		var person, git *owner
		for i := range owners[p] {
			o := &owners[p][i]
			switch {
			case o.gitops && (git == nil || o.at.After(git.at)):
				git = o
			case !o.gitops && (person == nil || o.at.After(person.at)):
				person = o
			}
		}
		switch {
		case person != nil && git == nil:
			res.Fields = append(
				res.Fields,
				Field{Path: p, Live: live, Manager: person.manager, ManagedAt: person.at, Subresource: person.subresource},
			)
			res.byPath[p] = true
		case git != nil:
			res.GitOps[p] = Field{Path: p, Live: live, Manager: git.manager, ManagedAt: git.at, Subresource: git.subresource}
		}
	}
	return res, nil
}

// Changed reports whether path is among Fields: changed live by someone
// other than a GitOps manager.
func (r LiveResult) Changed(path string) bool { return r.byPath[path] }

// managedFields is the object's metadata.managedFields list; absent is
// none, anything but a list is an error.
func managedFields(obj map[string]any) ([]any, error) {
	md := obj["metadata"]
	if md == nil {
		return nil, nil
	}
	m, ok := md.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("metadata: is a %T, want a mapping", md)
	}
	mf, ok := m["managedFields"]
	if !ok || mf == nil {
		return nil, nil
	}
	list, ok := mf.([]any)
	if !ok {
		return nil, fmt.Errorf("metadata.managedFields: is a %T, want a list", mf)
	}
	return list, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// maxFieldPaths bounds the leaves read from one managedFields entry.
const maxFieldPaths = 50_000

// walkFieldsV1 collects the leaf paths of a FieldsV1 set: f:<name> is a
// field, k:<json> a list item named by its keys, v:<json> a set item by its
// value, i:<n> a list item by index; "." marks the node itself, which
// counts as a leaf only when it has no children.
func walkFieldsV1(set map[string]any, live any, prefix []yamlnode.Segment, out *[]string) error {
	children := 0
	for key, sub := range set {
		if key == "." {
			continue
		}
		children++
		if len(*out) > maxFieldPaths {
			return fmt.Errorf("more than %d fields", maxFieldPaths)
		}
		subSet, _ := sub.(map[string]any)
		kind, rest, ok := strings.Cut(key, ":")
		if !ok {
			return fmt.Errorf("fieldsV1 key %q: want f:, k:, v: or i:", key) //nolint:revive // ends in the prefix i:
		}
		var seg yamlnode.Segment
		var next any
		switch kind {
		case "f":
			seg = yamlnode.Segment{Key: rest}
			if m, ok := live.(map[string]any); ok {
				next = m[rest]
			}
		case "k", "v":
			list, _ := live.([]any)
			idx := listItem(list, kind, rest)
			if idx < 0 {
				// Owned but gone from the live object: nothing to read.
				continue
			}
			seg, next = yamlnode.Segment{Index: idx, IsIndex: true}, list[idx]
		case "i":
			var n int
			if _, err := fmt.Sscanf(rest, "%d", &n); err != nil {
				return fmt.Errorf("fieldsV1 key %q: %w", key, err)
			}
			list, _ := live.([]any)
			if n < 0 || n >= len(list) {
				continue
			}
			seg, next = yamlnode.Segment{Index: n, IsIndex: true}, list[n]
		default:
			return fmt.Errorf("fieldsV1 key %q: want f:, k:, v: or i:", key) //nolint:revive // ends in the prefix i:
		}
		p := append(append([]yamlnode.Segment(nil), prefix...), seg)
		if len(subSet) == 0 || (len(subSet) == 1 && subSet["."] != nil) {
			*out = append(*out, yamlnode.FormatPath(p))
			continue
		}
		if err := walkFieldsV1(subSet, next, p, out); err != nil {
			return err
		}
	}
	if children == 0 && len(prefix) > 0 {
		*out = append(*out, yamlnode.FormatPath(prefix))
	}
	return nil
}

// listItem finds the item of a k: (merge keys) or v: (value) set key.
func listItem(list []any, kind, raw string) int {
	var want any
	if err := json.Unmarshal([]byte(raw), &want); err != nil {
		return -1
	}
	for i, item := range list {
		if kind == "v" {
			if values.Equal(item, want) {
				return i
			}
			continue
		}
		keys, ok := want.(map[string]any)
		m, isMap := item.(map[string]any)
		if !ok || !isMap {
			continue
		}
		match := true
		for k, v := range keys {
			if !values.Equal(m[k], v) {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}
