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

// Trace-diff statuses (cub-scout's traceDiffStatus*) and the only
// comparison backflow reads.
const (
	cubMatched      = "matched"
	cubChanged      = "changed"
	cubMissing      = "missing"
	cubInconclusive = "inconclusive"
	cubComparison   = "authored-fields-only"
	// cubDefaultCluster is what cub-scout watch says when CLUSTER_NAME is
	// unset: no cluster at all.
	cubDefaultCluster = "default"
)

// decodeTraceDiff reads `cub-scout trace --diff --format json` output (a
// traceDiffObservation). Only matched and changed are observations; missing
// and inconclusive are errors that say what was not compared (never an
// observation with no fields, which would read as live matching desired).
// cub-scout never says who made a change, so the attribution is unknown.
func decodeTraceDiff(m *mapping) (Observation, error) {
	o := Observation{Source: SourceCubScout, Change: Change{Attribution: AttributionUnknown, Claimed: AttributionUnknown}}
	status, err := m.str("status", true)
	if err != nil {
		return o, err
	}
	if o.Evidence.Comparison, err = m.str("comparison", false); err != nil {
		return o, err
	}
	if c := o.Evidence.Comparison; c != "" && c != cubComparison {
		return o, errAt(m.vals["comparison"], "comparison", "%s: backflow reads only %s comparisons", c, cubComparison)
	}
	read, err := m.sub("read", false)
	if err != nil {
		return o, err
	}
	res, err := m.sub("resource", false)
	if err != nil {
		return o, err
	}
	if res == nil && read != nil {
		res, err = read.sub("resource", false)
		if err != nil {
			return o, err
		}
	}
	if res == nil {
		return o, errAt(m.node, "resource", "required")
	}
	if o.Object, err = resourceKey(res, true); err != nil {
		return o, err
	}
	omissions, err := m.strs("omissions")
	if err != nil {
		return o, err
	}
	switch status {
	case cubMatched, cubChanged:
	case cubMissing:
		return o, errAt(
			m.vals["status"],
			"status",
			"missing: %s was not found live; an object absent live is not written back%s",
			o.Object,
			omissionNote(omissions),
		)
	case cubInconclusive:
		if len(omissions) == 0 {
			omissions = []string{"cub-scout gave no reason"}
		}
		return o, errAt(
			m.vals["status"],
			"status",
			"inconclusive: %s was not compared: %s",
			o.Object,
			strings.Join(omissions, "; "),
		)
	default:
		return o, errAt(
			m.vals["status"],
			"status",
			"%q: want %s, %s, %s or %s",
			status,
			cubMatched,
			cubChanged,
			cubMissing,
			cubInconclusive,
		)
	}
	if read == nil {
		return o, errAt(m.node, "read", "required for status %s: without the read, nothing says when live was seen", status)
	}
	if avail, given, err := read.boolean("available"); err != nil {
		return o, err
	} else if given && !avail {
		return o, errAt(read.vals["available"], "read.available", "false: the live object was not read")
	}
	if src, err := m.sub("source", false); err != nil {
		return o, err
	} else if src != nil {
		for _, f := range []struct {
			key string
			to  *string
		}{
			{"kind", &o.Evidence.RenderKind},
			{"reference", &o.Evidence.RenderReference},
			{"digest", &o.Evidence.RenderDigest},
		} {
			if *f.to, err = src.str(f.key, false); err != nil {
				return o, err
			}
		}
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
	if o.UID, err = read.str("uid", false); err != nil {
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
	case status == cubChanged && len(items) == 0:
		return o, errAt(m.vals["status"], "status", "changed, but no differences are listed")
	case status != cubChanged && len(items) > 0:
		return o, errAt(m.vals["status"], "status", "%s, but differences are listed: want changed", status)
	}
	if o.Fields, err = cubFields(items, "differences", o.Object.Kind); err != nil {
		return o, err
	}
	return o, nil
}

func omissionNote(omissions []string) string {
	if len(omissions) == 0 {
		return ""
	}
	return " (" + strings.Join(omissions, "; ") + ")"
}

// cubFields reads cub-scout's field differences ({field, desired, live,
// cause?, managerHint?}, desired and live always strings) of an object of
// kind: paths in backflow's spelling, a field whose two texts print the
// same number left out (no change), a live "-" ambiguous, structure
// flagged, the type the kind's schema fixes kept, managerHint kept as a
// hint only.
func cubFields(items []*yaml.Node, at, kind string) ([]Field, error) {
	fields := make([]Field, 0, len(items))
	seen := map[string]bool{}
	for i, item := range items {
		path := fmt.Sprintf("%s[%d]", at, i)
		dm, err := asMapping(item, path)
		if err != nil {
			return nil, err
		}
		f := Field{Textual: true}
		raw, err := dm.str("field", true)
		if err != nil {
			return nil, err
		}
		var under scalarMap
		if f.Path, under, err = cubFieldPath(kind, raw); err != nil {
			return nil, errAt(dm.vals["field"], path+".field", "%v", err)
		}
		if seen[f.Path] {
			return nil, errAt(dm.vals["field"], path+".field", "field %s is listed twice", f.Path)
		}
		seen[f.Path] = true
		live, err := cubString(dm, "live", path)
		if err != nil {
			return nil, err
		}
		desired, err := cubString(dm, "desired", path)
		if err != nil {
			return nil, err
		}
		if cubSameValue(desired, live, under) {
			// One value printed twice, or one number printed two ways (a
			// desired float64's 1.073741824e+09, a live quantity's
			// 1073741824): cub-scout compared a number with a string, and
			// nothing changed. In a map of strings both texts are strings,
			// and two spellings of a number differ.
			continue
		}
		f.StringValued = under == inStringMap
		f.Structural = cubStructure(raw, desired, live, under)
		switch {
		case !cubNothing(live):
			f.Live = live
		case f.Structural == "":
			f.Ambiguous = cubAmbiguousLive
		}
		// The text, "-" included: DesiredLike reads the placeholder as
		// nothing, DesiredAgrees as any value it stands for.
		f.Desired, f.HasDesired = desired, true
		if f.ManagerHint, err = dm.str("managerHint", false); err != nil {
			return nil, err
		}
		if f.Cause, err = dm.str("cause", false); err != nil {
			return nil, err
		}
		fields = append(fields, f)
	}
	return fields, nil
}

// cubString reads cub-scout's desired or live: always a string in its
// output; absent or null is read as its placeholder for nothing.
func cubString(dm *mapping, key, path string) (string, error) {
	n, ok := dm.vals[key]
	if !ok || yamlnode.IsNull(n) {
		return "-", nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", errAt(n, path+"."+key, "want a string")
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

// Watch event types (cub-scout watch's event types).
const (
	eventDriftDetected = "drift.detected"
	eventScanFinding   = "scan.finding"
	eventDeleted       = "resource.deleted"
	eventOwnership     = "ownership.changed"
	eventDiscovered    = "resource.discovered"
	// ownerNative is cub-scout's owner of an object no controller applies.
	ownerNative = "Native"
)

// watchEvent is what one cub-scout watch event asks of backflow: at most one
// of trigger, forget and notice is set; none when the event is not used.
type watchEvent struct {
	trigger *Trigger
	forget  *Forget
	notice  *Notice
}

// decodeWatchEvent reads one `cub-scout watch` event. A drift.detected or
// scan.finding event whose details.category is DRIFT is a trigger to look at
// the object again (STATE findings are about readiness, not drift); a
// resource.deleted event forgets the object; an ownership.changed event to
// the Native owner (taken out of its controller's hands) is a notice.
// Every other event is read and not used.
func decodeWatchEvent(m *mapping) (watchEvent, error) {
	var ev watchEvent
	typ, err := m.str("type", true)
	if err != nil {
		return ev, err
	}
	at, err := m.time("timestamp", true)
	if err != nil {
		return ev, err
	}
	details, err := m.sub("details", false)
	if err != nil {
		return ev, err
	}
	detail := func(key string) (string, error) {
		if details == nil {
			return "", nil
		}
		return details.str(key, false)
	}
	switch typ {
	case eventDriftDetected, eventScanFinding, eventDeleted, eventOwnership:
	default:
		return ev, nil
	}
	if typ == eventDriftDetected || typ == eventScanFinding {
		category, err := detail("category")
		if err != nil {
			return ev, err
		}
		if !strings.EqualFold(category, "DRIFT") {
			return ev, nil
		}
	}
	res, err := m.sub("resource", true)
	if err != nil {
		return ev, err
	}
	object, err := resourceKey(res, false)
	if err != nil {
		return ev, err
	}
	cluster, err := watchCluster(m)
	if err != nil {
		return ev, err
	}
	owner, ownerName := "", ""
	if om, err := m.sub("owner", false); err != nil {
		return ev, err
	} else if om != nil {
		if owner, err = om.str("type", false); err != nil {
			return ev, err
		}
		if ownerName, err = om.str("name", false); err != nil {
			return ev, err
		}
	}
	switch typ {
	case eventDeleted:
		ev.forget = &Forget{Object: object, Cluster: cluster, At: at}
	case eventOwnership:
		before, err := detail("before")
		if err != nil {
			return ev, err
		}
		after, err := detail("after")
		if err != nil {
			return ev, err
		}
		if after == "" {
			after = owner
		}
		if after != ownerNative || before == ownerNative {
			return ev, nil
		}
		if before == "" {
			before = "its controller"
		}
		ev.notice = &Notice{Object: object, Cluster: cluster, At: at,
			Message: fmt.Sprintf(
				"ownership changed from %s to %s: no GitOps controller applies the object any more, so its live state will not "+
					"be reconciled to desired",
				before,
				after,
			)}
	default:
		msg, err := detail("message")
		if err != nil {
			return ev, err
		}
		ev.trigger = &Trigger{Object: object, Cluster: cluster, At: at, Message: msg, Owner: owner, OwnerName: ownerName}
	}
	return ev, nil
}

// watchCluster reads observation.scope.cluster, cub-scout's CLUSTER_NAME.
// Its default, "default", says nothing about which cluster: it is read as
// no cluster, which the operator's configuration must supply.
func watchCluster(m *mapping) (string, error) {
	obs, err := m.sub("observation", false)
	if err != nil || obs == nil {
		return "", err
	}
	scope, err := obs.sub("scope", false)
	if err != nil || scope == nil {
		return "", err
	}
	c, err := scope.str("cluster", false)
	if err != nil || c == cubDefaultCluster {
		return "", err
	}
	return c, nil
}
