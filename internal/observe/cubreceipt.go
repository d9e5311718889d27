package observe

import (
	"fmt"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// cub-scout's receipts are in-toto Statements (v1) with cub-scout's own
// predicate. backflow reads two kinds:
//   - an object-set-diff receipt (predicate.evidence.objectSetDiff): each
//     changed object is an observation, its differences read exactly as a
//     trace-diff's;
//   - any other receipt about one live object (a k8s-live:// subject) whose
//     verdict is BLOCK or WATCH: a trigger to look at the object again, as
//     it carries no field values.
//
// Either way the receipt's anchor (predicate.spec.anchor) and attribution
// hints (predicate.evidence.attribution) are kept as evidence. None of it
// names who made a change.
const (
	inTotoStatement     = "https://in-toto.io/Statement/v1"
	cubReceiptPredicate = "https://cub-scout.dev/receipt/v1"
	cubLiveSubject      = "k8s-live://"
)

// decodeCubReceipt reads one cub-scout receipt.
func decodeCubReceipt(m *mapping) ([]Observation, []Trigger, error) {
	typ, err := m.str("_type", true)
	if err != nil {
		return nil, nil, err
	}
	if typ != inTotoStatement {
		return nil, nil, errAt(m.vals["_type"], "_type", "%q: want %s", typ, inTotoStatement)
	}
	pt, err := m.str("predicateType", true)
	if err != nil {
		return nil, nil, err
	}
	if pt != cubReceiptPredicate {
		return nil, nil, errAt(
			m.vals["predicateType"],
			"predicateType",
			"%q: backflow reads only cub-scout receipts (%s)",
			pt,
			cubReceiptPredicate,
		)
	}
	p, err := m.sub("predicate", true)
	if err != nil {
		return nil, nil, err
	}
	ev := Evidence{}
	name, err := p.str("predicateName", true)
	if err != nil {
		return nil, nil, err
	}
	fingerprint, err := p.str("fingerprint", false)
	if err != nil {
		return nil, nil, err
	}
	ev.Receipt = strings.TrimSpace(name + " " + fingerprint)
	verdict, err := p.str("verdict", true)
	if err != nil {
		return nil, nil, err
	}
	at, err := receiptTime(p)
	if err != nil {
		return nil, nil, err
	}
	scope, err := p.sub("scope", true)
	if err != nil {
		return nil, nil, err
	}
	cluster, err := scope.str("cluster", false)
	if err != nil {
		return nil, nil, err
	}
	if cluster == cubDefaultCluster {
		cluster = ""
	}
	if ev.Anchor, err = receiptAnchor(p); err != nil {
		return nil, nil, err
	}
	evidence, err := p.sub("evidence", true)
	if err != nil {
		return nil, nil, err
	}
	if attr, err := evidence.sub("attribution", false); err != nil {
		return nil, nil, err
	} else if attr != nil {
		if ev.Cause, err = attr.str("cause", false); err != nil {
			return nil, nil, err
		}
		if ev.ManagerHint, err = attr.str("managerHint", false); err != nil {
			return nil, nil, err
		}
		if ev.Managers, err = attr.strs("managers"); err != nil {
			return nil, nil, err
		}
	}
	diff, err := evidence.sub("objectSetDiff", false)
	if err != nil {
		return nil, nil, err
	}
	if diff != nil {
		obs, err := objectSetDiffObservations(diff, ev, cluster, at)
		return obs, nil, err
	}
	// A receipt about one live object: a trigger when it found a problem.
	switch verdict {
	case "BLOCK", "WATCH":
	default:
		return nil, nil, nil
	}
	object, err := receiptSubject(m, scope)
	if err != nil {
		return nil, nil, err
	}
	msg := fmt.Sprintf("cub-scout receipt %s: verdict %s", name, verdict)
	if ev.Anchor != nil {
		msg += "; desired state anchored at " + ev.Anchor.String()
	}
	if ev.ManagerHint != "" {
		msg += "; manager hint " + ev.ManagerHint
	}
	return nil, []Trigger{{Object: object, Cluster: cluster, At: at, Message: msg}}, nil
}

// receiptTime is when the receipt says live was read: its freshness
// boundary's observedAt, else when it was verified.
func receiptTime(p *mapping) (time.Time, error) {
	if f, err := p.sub("freshness", false); err != nil {
		return time.Time{}, err
	} else if f != nil {
		if t, err := f.time("observedAt", false); err != nil || !t.IsZero() {
			return t, err
		}
	}
	return p.time("verifiedAt", true)
}

// receiptAnchor reads predicate.spec.anchor; nil when there is none.
func receiptAnchor(p *mapping) (*Anchor, error) {
	spec, err := p.sub("spec", false)
	if err != nil || spec == nil {
		return nil, err
	}
	am, err := spec.sub("anchor", false)
	if err != nil || am == nil {
		return nil, err
	}
	a := &Anchor{}
	for _, f := range []struct {
		key string
		to  *string
	}{{"type", &a.Type}, {"repoUrl", &a.RepoURL}, {"revision", &a.Revision}, {"path", &a.Path}, {"file", &a.File}} {
		if *f.to, err = am.str(f.key, false); err != nil {
			return nil, err
		}
	}
	if *a == (Anchor{}) {
		return nil, nil
	}
	return a, nil
}

// objectSetDiffObservations turns each changed object of an object-set-diff
// receipt into an observation.
func objectSetDiffObservations(diff *mapping, ev Evidence, cluster string, at time.Time) ([]Observation, error) {
	if src, err := diff.sub("desiredSource", false); err != nil {
		return nil, err
	} else if src != nil {
		for _, f := range []struct {
			key string
			to  *string
		}{{"type", &ev.RenderKind}, {"ref", &ev.RenderReference}, {"digest", &ev.RenderDigest}} {
			if *f.to, err = src.str(f.key, false); err != nil {
				return nil, err
			}
		}
	}
	ev.Comparison = cubComparison
	changed, ok := diff.vals["changedObjects"]
	if !ok || yamlnode.IsNull(changed) {
		return nil, nil
	}
	at0 := yamlnode.Join(diff.path, "changedObjects")
	if changed.Kind != yaml.SequenceNode {
		return nil, errAt(changed, at0, "want a list")
	}
	var out []Observation
	for i, item := range changed.Content {
		path := yamlnode.Index(at0, i)
		cm, err := asMapping(item, path)
		if err != nil {
			return nil, err
		}
		id, err := cm.sub("id", true)
		if err != nil {
			return nil, err
		}
		o := Observation{Source: SourceCubScout, Cluster: cluster, ObservedAt: at, Evidence: ev,
			Change: Change{Attribution: AttributionUnknown, Claimed: AttributionUnknown}}
		if o.Object, err = resourceKey(id, true); err != nil {
			return nil, err
		}
		diffs, ok := cm.vals["differences"]
		if !ok || yamlnode.IsNull(diffs) || diffs.Kind != yaml.SequenceNode || len(diffs.Content) == 0 {
			return nil, errAt(item, path, "a changed object with no differences")
		}
		if o.Fields, err = cubFields(diffs.Content, yamlnode.Join(path, "differences"), o.Object.Kind); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// receiptSubject finds the receipt's live object: its k8s-live:// subject,
// read with the scope's kind and name (k8s-live://apps/v1/Deployment/prod/api).
func receiptSubject(m *mapping, scope *mapping) (ObjectKey, error) {
	var k ObjectKey
	kind, err := scope.str("kind", true)
	if err != nil {
		return k, err
	}
	subjects, ok := m.vals["subject"]
	if !ok || subjects.Kind != yaml.SequenceNode {
		return k, errAt(m.node, "subject", "want a list")
	}
	for i, s := range subjects.Content {
		sm, err := asMapping(s, yamlnode.Index("subject", i))
		if err != nil {
			return k, err
		}
		name, err := sm.str("name", false)
		if err != nil {
			return k, err
		}
		rest, ok := strings.CutPrefix(name, cubLiveSubject)
		if !ok {
			continue
		}
		parts := strings.Split(rest, "/")
		ki := -1
		for j, part := range parts {
			if part == kind {
				ki = j
				break
			}
		}
		if ki < 1 || len(parts)-ki < 2 || len(parts)-ki > 3 {
			return k, errAt(
				s,
				yamlnode.Index("subject", i)+".name",
				"%q: want k8s-live://apiVersion/Kind/[namespace/]name",
				name,
			)
		}
		k = ObjectKey{APIVersion: strings.Join(parts[:ki], "/"), Kind: kind, Name: parts[len(parts)-1]}
		if len(parts)-ki == 3 {
			k.Namespace = parts[ki+1]
		}
		if err := k.validate(); err != nil {
			return k, errAt(s, yamlnode.Index("subject", i)+".name", "%v", err)
		}
		return k, nil
	}
	return k, errAt(m.node, "subject", "no %s subject names the live object", cubLiveSubject)
}
