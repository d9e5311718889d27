package observe

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// decodeNative reads an ObjectStateObserved document strictly: unknown keys
// are errors, since a misspelt key would otherwise silently drop evidence.
func decodeNative(m *mapping, ceiling Attribution) (Observation, error) {
	var o Observation
	if err := m.strict("apiVersion", "kind", "metadata", "spec"); err != nil {
		return o, err
	}
	if v, err := m.str("apiVersion", true); err != nil {
		return o, err
	} else if v != APIVersion {
		return o, errAt(m.vals["apiVersion"], "apiVersion", "want %s", APIVersion)
	}
	if v, err := m.str("kind", true); err != nil {
		return o, err
	} else if v != Kind {
		return o, errAt(m.vals["kind"], "kind", "want %s", Kind)
	}
	if md, err := m.sub("metadata", false); err != nil {
		return o, err
	} else if md != nil {
		if err := md.strict("name"); err != nil {
			return o, err
		}
		if o.Name, err = md.str("name", false); err != nil {
			return o, err
		}
	}
	spec, err := m.sub("spec", true)
	if err != nil {
		return o, err
	}
	err = spec.strict("source", "cluster", "environment", "observedAt", "object", "resourceVersion", "change", "fields")
	if err != nil {
		return o, err
	}
	if o.Source, err = spec.str("source", false); err != nil {
		return o, err
	}
	switch o.Source {
	case "":
		o.Source = SourceFile
	case SourceCubScout, SourceKubernetes, SourceFile:
	default:
		return o, errAt(spec.vals["source"], "spec.source", "want cub-scout, kubernetes or file")
	}
	if o.Cluster, err = spec.str("cluster", true); err != nil {
		return o, err
	}
	if o.Environment, err = spec.str("environment", false); err != nil {
		return o, err
	}
	if o.ObservedAt, err = spec.time("observedAt", true); err != nil {
		return o, err
	}
	key, err := spec.str("object", true)
	if err != nil {
		return o, err
	}
	if o.Object, err = ParseObjectKey(key); err != nil {
		return o, errAt(spec.vals["object"], "spec.object", "%v", err)
	}
	if o.ResourceVersion, err = spec.str("resourceVersion", false); err != nil {
		return o, err
	}
	if o.Change, err = decodeChange(spec, ceiling); err != nil {
		return o, err
	}
	if !spec.has("fields") {
		// An absent list is not evidence of anything; only an explicit
		// empty list says the object matched desired.
		return o, errAt(spec.node, "spec.fields", "required (an empty list says the object matched desired)")
	}
	if o.Fields, err = decodeFields(spec); err != nil {
		return o, err
	}
	return o, nil
}

func decodeChange(spec *mapping, ceiling Attribution) (Change, error) {
	c := Change{Attribution: AttributionUnknown, Claimed: AttributionUnknown}
	cm, err := spec.sub("change", false)
	if err != nil || cm == nil {
		return c, err
	}
	if err := cm.strict("actor", "groups", "attribution", "at", "intent"); err != nil {
		return c, err
	}
	if c.Actor, err = cm.str("actor", false); err != nil {
		return c, err
	}
	if c.Groups, err = cm.strs("groups"); err != nil {
		return c, err
	}
	level, err := cm.str("attribution", false)
	if err != nil {
		return c, err
	}
	if level != "" {
		if c.Claimed, err = ParseAttribution(level); err != nil {
			return c, errAt(
				cm.vals["attribution"],
				"spec.change.attribution",
				"want unknown, asserted, managed-fields, admission or audit-log",
			)
		}
	}
	if c.Actor == "" && c.Claimed != AttributionUnknown {
		return c, errAt(cm.node, "spec.change.actor", "required when attribution is %s", c.Claimed)
	}
	c.Attribution = c.Claimed.Cap(ceiling)
	if c.At, err = cm.time("at", false); err != nil {
		return c, err
	}
	if c.Intent, err = cm.str("intent", false); err != nil {
		return c, err
	}
	return c, nil
}

func decodeFields(spec *mapping) ([]Field, error) {
	n := spec.vals["fields"]
	if yamlnode.IsNull(n) {
		return nil, errAt(n, "spec.fields", "want a list (an empty list says the object matched desired)")
	}
	if n.Kind != yaml.SequenceNode {
		return nil, errAt(n, "spec.fields", "want a list")
	}
	fields := make([]Field, 0, len(n.Content))
	seen := map[string]bool{}
	for i, item := range n.Content {
		path := fmt.Sprintf("spec.fields[%d]", i)
		fm, err := asMapping(item, path)
		if err != nil {
			return nil, err
		}
		if err := fm.strict("field", "live", "removed", "desired", "manager", "cause"); err != nil {
			return nil, err
		}
		var f Field
		if f.Path, err = fm.str("field", true); err != nil {
			return nil, err
		}
		if err := checkFieldPath(f.Path); err != nil {
			return nil, errAt(fm.vals["field"], path+".field", "%v", err)
		}
		if seen[f.Path] {
			return nil, errAt(fm.vals["field"], path+".field", "field %s is listed twice", f.Path)
		}
		seen[f.Path] = true
		if f.Removed, _, err = fm.boolean("removed"); err != nil {
			return nil, err
		}
		switch live, has := fm.vals["live"]; {
		case f.Removed && has:
			return nil, errAt(live, path+".live", "not allowed with removed: true")
		case !f.Removed && !has:
			return nil, errAt(item, path+".live", "required (or removed: true)")
		case has:
			if f.Live, err = anyValue(live, path+".live"); err != nil {
				return nil, err
			}
		}
		if d, has := fm.vals["desired"]; has {
			f.HasDesired = true
			if f.Desired, err = anyValue(d, path+".desired"); err != nil {
				return nil, err
			}
		}
		if f.Manager, err = fm.str("manager", false); err != nil {
			return nil, err
		}
		if f.Cause, err = fm.str("cause", false); err != nil {
			return nil, err
		}
		fields = append(fields, f)
	}
	return fields, nil
}

// checkFieldPath refuses paths that cannot name a field: padded with
// spaces, holding a control character, or not read by yamlnode.ParsePath,
// the one reader of path syntax (empty segments, an unterminated index or
// escape, an index that is not digits).
func checkFieldPath(p string) error {
	if strings.TrimSpace(p) != p || p == "" {
		return fmt.Errorf("field path %q: empty or padded with spaces", p)
	}
	if strings.ContainsAny(p, "\n\r\x00") {
		return fmt.Errorf("field path contains a control character")
	}
	if _, err := yamlnode.ParsePath(p); err != nil {
		return fmt.Errorf("field %w", err)
	}
	return nil
}
