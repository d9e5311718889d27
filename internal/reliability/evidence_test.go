package reliability

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
	"github.com/backflow-dev/backflow/internal/plan"
)

// bareDoc is a native observation document with no change block: it says
// only what spec.replicas is live, as any source can.
func bareDoc(at time.Time, live int) string {
	return fmt.Sprintf(`apiVersion: backflow.dev/v1alpha1
kind: ObjectStateObserved
spec:
  cluster: prod-us-east-1
  observedAt: %q
  object: "apps/v1|StatefulSet|redis|redis-replicas"
  fields:
    - field: spec.replicas
      live: %d
      desired: 3
`, at.UTC().Format(time.RFC3339), live)
}

// scaleEvent is the audit event of user's patch of redis-replicas' scale
// subresource to replicas, as the API server's log backend writes it.
func scaleEvent(t testing.TB, id, user string, replicas int, at time.Time) observe.AuditEvent {
	t.Helper()
	line, err := json.Marshal(map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Request", "auditID": id, "stage": "ResponseComplete",
		"requestURI": "/apis/apps/v1/namespaces/redis/statefulsets/redis-replicas/scale", "verb": "patch",
		"user":      map[string]any{"username": user, "groups": []string{"sre", "system:authenticated"}},
		"userAgent": "kubectl/v1.34.4", "responseStatus": map[string]any{"code": 200},
		"objectRef":                map[string]any{"resource": "statefulsets", "subresource": "scale", "namespace": "redis", "name": "redis-replicas", "apiGroup": "apps", "apiVersion": "v1"},
		"requestObject":            map[string]any{"spec": map[string]any{"replicas": replicas}},
		"requestReceivedTimestamp": at.UTC().Format(time.RFC3339Nano),
	})
	if err != nil {
		t.Fatal(err)
	}
	res := observe.ParseAuditEvents(line, "audit.log")
	if len(res.Events) != 1 {
		t.Fatalf("audit event: %v", res.Errors)
	}
	return res.Events[0]
}

// Case 16: the audit join attributes a field only when the value the
// audited write set is the live value. kofi scaled to 4 through the audit
// log; a file source trusted at asserted, with no change block, says 8:
// nothing of 8 is attributed to kofi, allowed or merged, and the deny
// reason names the mismatch. The same file saying 4 is kofi's change.
func TestCase16AuditJoinCarriesValue(t *testing.T) {
	e := newHubEnv(t, gitopsFiles(t))
	a := e.adapter(nil)
	dir := t.TempDir()
	obsFile := filepath.Join(dir, "obs.yaml")
	audit := &source.AuditLog{}
	audit.Add(scaleEvent(t, "kofi-1", "kofi", 4, e.clock.Now().Add(-time.Minute)))
	src := &source.Attributing{Source: &app.PathSource{Cluster: usEastNode, Path: dir, Ceiling: observe.AttributionAsserted}, Log: audit}
	b := e.newBot(a, src, forge.CommitGit)

	laundered, mismatchReported, allowed := 0, 0, 0
	lies := count(3, 12)
	for i := range lies {
		live := 5 + i%4 // 5..8: in bounds, never the 4 kofi set
		if err := os.WriteFile(obsFile, []byte(bareDoc(e.clock.Now(), live)), 0o644); err != nil {
			t.Fatal(err)
		}
		rep := e.cycle(b)
		for _, rr := range rep.Repos {
			for _, d := range rr.Decisions {
				if d.Outcome == string(plan.Allow) {
					laundered++
					t.Errorf("live %d, which nobody recorded writing, was allowed: %+v", live, d)
				}
				if strings.Contains(strings.Join(d.Reasons, "\n"), "value mismatch") {
					mismatchReported++
				}
			}
		}
		e.clock.Advance(time.Minute)
	}
	merged := 0
	for _, pr := range e.pulls(a, e.repo) {
		if pr.Merged {
			merged++
		}
	}
	// The value kofi did set is his change.
	if err := os.WriteFile(obsFile, []byte(bareDoc(e.clock.Now(), 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rr := range e.cycle(b).Repos {
		for _, d := range rr.Decisions {
			if d.Outcome == string(plan.Allow) {
				allowed++
			}
		}
	}
	if merged != 0 {
		t.Errorf("%d pull requests merged from unrecorded values", merged)
	}
	if mismatchReported != lies {
		t.Errorf("the mismatch was reported in %d of %d cycles", mismatchReported, lies)
	}
	if allowed != 1 {
		t.Errorf("kofi's own value 4 was allowed %d times, want 1", allowed)
	}
	report(t, "16", "audit-join-carries-value", "laundered_values_allowed", laundered, "merged", merged,
		"mismatches_reported", fmt.Sprintf("%d/%d", mismatchReported, lies), "recorded_value_allowed", allowed)
}
