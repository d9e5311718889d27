package observe

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// cub-scout's outputs are another project's formats: keys backflow does not
// use are ignored (so a newer cub-scout still reads), but every key backflow
// does use is checked.

// notCompared are trace-diff statuses that say the object was not compared.
// Such a document must not become an observation with no fields, which
// would read as evidence that live matched desired.
var notCompared = map[string]bool{
	"error": true, "failed": true, "unavailable": true, "missing": true,
	"not-found": true, "notfound": true, "unknown": true, "skipped": true,
}

// decodeTraceDiff reads `cub-scout trace --diff --format json` output (a
// traceDiffObservation). cub-scout never says who made a change, so the
// attribution is unknown.
func decodeTraceDiff(m *mapping) (Observation, error) {
	o := Observation{Source: SourceCubScout, Change: Change{Attribution: AttributionUnknown, Claimed: AttributionUnknown}}
	status, err := m.str("status", true)
	if err != nil {
		return o, err
	}
	read, err := m.sub("read", true)
	if err != nil {
		return o, err
	}
	if avail, given, err := read.boolean("available"); err != nil {
		return o, err
	} else if given && !avail {
		return o, errAt(read.vals["available"], "read.available", "false: the live object was not read")
	}
	if notCompared[strings.ToLower(status)] {
		return o, errAt(m.vals["status"], "status", "%s: the object was not compared", status)
	}
	res, err := m.sub("resource", false)
	if err != nil {
		return o, err
	}
	if res == nil {
		if res, err = read.sub("resource", true); err != nil {
			return o, err
		}
	}
	if o.Object, err = resourceKey(res, true); err != nil {
		return o, err
	}
	if o.Cluster, err = m.str("context", false); err != nil {
		return o, err
	}
	if o.Cluster == "" {
		if o.Cluster, err = read.str("context", true); err != nil {
			return o, err
		}
	}
	if o.ObservedAt, err = read.time("observedAt", true); err != nil {
		return o, err
	}
	if o.ResourceVersion, err = read.str("resourceVersion", false); err != nil {
		return o, err
	}
	diffs, has := m.vals["differences"]
	if has && !yamlnode.IsNull(diffs) && diffs.Kind != yaml.SequenceNode {
		return o, errAt(diffs, "differences", "want a list")
	}
	var items []*yaml.Node
	if has && !yamlnode.IsNull(diffs) {
		items = diffs.Content
	}
	switch {
	case status == "changed" && len(items) == 0:
		return o, errAt(m.vals["status"], "status", "changed, but no differences are listed")
	case status != "changed" && len(items) > 0:
		return o, errAt(m.vals["status"], "status", "%s, but differences are listed: want changed", status)
	}
	o.Fields = make([]Field, 0, len(items))
	seen := map[string]bool{}
	for i, item := range items {
		path := fmt.Sprintf("differences[%d]", i)
		dm, err := asMapping(item, path)
		if err != nil {
			return o, err
		}
		f := Field{Textual: true}
		if f.Path, err = dm.str("field", true); err != nil {
			return o, err
		}
		if err := checkFieldPath(f.Path); err != nil {
			return o, errAt(dm.vals["field"], path+".field", "%v", err)
		}
		if seen[f.Path] {
			return o, errAt(dm.vals["field"], path+".field", "field %s is listed twice", f.Path)
		}
		seen[f.Path] = true
		if n, ok := dm.vals["live"]; ok {
			if f.Live, err = scalarValue(n, path+".live"); err != nil {
				return o, err
			}
		} else {
			f.Removed = true
		}
		if n, ok := dm.vals["desired"]; ok {
			f.HasDesired = true
			if f.Desired, err = scalarValue(n, path+".desired"); err != nil {
				return o, err
			}
		}
		if f.Manager, err = dm.str("managerHint", false); err != nil {
			return o, err
		}
		if f.Cause, err = dm.str("cause", false); err != nil {
			return o, err
		}
		o.Fields = append(o.Fields, f)
	}
	return o, nil
}

// scalarValue reads cub-scout's live/desired: text is kept as text (the
// planner reads it per the typing table); a null stays null.
func scalarValue(n *yaml.Node, path string) (any, error) {
	if n.Kind != yaml.ScalarNode {
		return nil, errAt(n, path, "want a string")
	}
	if yamlnode.IsNull(n) {
		return nil, nil
	}
	return n.Value, nil
}

// resourceKey reads a {apiVersion, kind, namespace, name} mapping. With
// strict, apiVersion is required too; a watch event may leave it out.
func resourceKey(res *mapping, strict bool) (ObjectKey, error) {
	var k ObjectKey
	var err error
	if k.APIVersion, err = res.str("apiVersion", strict); err != nil {
		return k, err
	}
	if k.Kind, err = res.str("kind", true); err != nil {
		return k, err
	}
	if k.Namespace, err = res.str("namespace", false); err != nil {
		return k, err
	}
	if k.Name, err = res.str("name", true); err != nil {
		return k, err
	}
	for _, s := range []string{k.APIVersion, k.Kind, k.Namespace, k.Name} {
		if strings.ContainsAny(s, "|\n\r\t ") {
			return k, errAt(res.node, res.path, "%q contains a separator or whitespace", s)
		}
	}
	return k, nil
}

// Watch event types that may be triggers.
const (
	eventDriftDetected = "drift.detected"
	eventScanFinding   = "scan.finding"
)

// decodeWatchEvent reads one `cub-scout watch` event. A drift.detected event,
// or a scan.finding in the DRIFT category, is a trigger to look at the
// object again; use is false for every other event.
func decodeWatchEvent(m *mapping) (Trigger, bool, error) {
	var t Trigger
	typ, err := m.str("type", true)
	if err != nil {
		return t, false, err
	}
	if t.At, err = m.time("timestamp", true); err != nil {
		return t, false, err
	}
	details, err := m.sub("details", false)
	if err != nil {
		return t, false, err
	}
	switch typ {
	case eventDriftDetected:
	case eventScanFinding:
		category := ""
		if details != nil {
			if category, err = details.str("category", false); err != nil {
				return t, false, err
			}
		}
		if !strings.EqualFold(category, "DRIFT") {
			return t, false, nil
		}
	default:
		return t, false, nil
	}
	res, err := m.sub("resource", true)
	if err != nil {
		return t, false, err
	}
	if t.Object, err = resourceKey(res, false); err != nil {
		return t, false, err
	}
	for _, key := range []string{"context", "cluster"} {
		if t.Cluster != "" {
			break
		}
		if t.Cluster, err = m.str(key, false); err != nil {
			return t, false, err
		}
	}
	if details != nil {
		if t.Message, err = details.str("message", false); err != nil {
			return t, false, err
		}
	}
	return t, true, nil
}
