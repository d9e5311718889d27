package source

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/backflow-dev/backflow/internal/observe"
)

// recordTransition keeps the person's fields that the watch's transition
// of a watched object, u after old (nil on a list), changed, with the
// admission records just confirmed for it, so that a revert before the
// next Read does not erase them. A transition that cannot be read is
// left out: the object is still observed as it is, and the error is
// reported by that observation.
func (s *KubeSource) recordTransition(k observe.ObjectKey, old, u *unstructured.Unstructured) {
	if s.Transitions == nil || old == nil {
		return
	}
	var records []observe.AdmissionRecord
	if s.Admission != nil {
		records = s.Admission.RecordsOf(k)
	}
	_, _ = s.Transitions.Record(s.Cluster, old.Object, u.Object, s.GitOpsManagers, s.IgnoreManagers, records)
}

// settleTransitions marks the transitions that observation o reports with
// their author as settled: a cycle has judged them, so a revert that comes
// later is the controller's write over a decided change (reported as the
// forward apply's, as before), not a change to judge again, and a person's
// change reverted then never attaches to someone else's next one. A field
// is reported with its author when the join attributed it at admission or
// above, or when there is no audit log nor admission log to wait for.
func (s *KubeSource) settleTransitions(uid string, o observe.Observation) {
	if s.Transitions == nil {
		return
	}
	final := s.Audit == nil && s.Admission == nil
	for _, f := range o.Fields {
		if f.Cause == observe.CauseForwardApply || f.By == nil {
			continue
		}
		if final || f.By.Attribution.Rank() >= observe.AttributionAdmission.Rank() {
			s.Transitions.Settle(s.Cluster, uid, f.Path, f.Live)
		}
	}
}

// reverted returns, by path, the fields of object uid whose person's
// change a GitOps controller wrote over before this Read, and the
// admission records that attribute them.
func (s *KubeSource) reverted(
	uid string,
	live observe.LiveResult,
	rv string,
) (map[string]observe.Field, []observe.AdmissionRecord) {
	if s.Transitions == nil {
		return nil, nil
	}
	fields, records := observe.RevertedFields(s.Transitions.Of(s.Cluster, uid), live, rv)
	if len(fields) == 0 {
		return nil, nil
	}
	out := make(map[string]observe.Field, len(fields))
	for _, f := range fields {
		out[f.Path] = f
	}
	return out, records
}
