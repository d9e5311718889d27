package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
)

// auditBatch is one EventList as the API server's audit webhook posts it:
// alice's scale of redis-replicas (items carry no kind of their own).
const auditBatch = `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[{"level":"Request","auditID":"a1","stage":"ResponseComplete","requestURI":"/apis/apps/v1/namespaces/redis/statefulsets/redis-replicas/scale","verb":"patch","user":{"username":"alice","groups":["sre"]},"userAgent":"kubectl/v1.34.4","objectRef":{"resource":"statefulsets","namespace":"redis","name":"redis-replicas","apiGroup":"apps","apiVersion":"v1","subresource":"scale"},"responseStatus":{"code":200},"requestObject":{"spec":{"replicas":4}},"requestReceivedTimestamp":"2026-11-29T10:00:00.000000Z","stageTimestamp":"2026-11-29T10:00:00.010000Z"}]}`

func TestServeLive(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "audit-token", "s3cret\n")
	base := "version: 1\ngithub:\n  appId: 7\n  privateKeyEnv: KEY\nobservations:\n  prod-us-east-1:\n    - kube:\n        objects: [\"apps/v1|StatefulSet|redis|redis-*\"]\n"
	cases := []struct {
		why, audit string
		routes     bool
		err        string
	}{
		{why: "without audit.webhook there is no /audit route", audit: "audit:\n  logFiles: [audit.log]\n"},
		{why: "audit.webhook mounts POST /audit with its own token", audit: "audit:\n  webhook:\n    tokenFile: audit-token\n", routes: true},
		{why: "a missing token file is an error naming the key, not a silent open door", audit: "audit:\n  webhook:\n    tokenFile: nope\n", err: "audit.webhook.token"},
		{why: "an unset variable is an error", audit: "audit:\n  webhook:\n    secretEnv: BACKFLOW_E2E_UNSET_AUDIT_SECRET\n", err: "BACKFLOW_E2E_UNSET_AUDIT_SECRET is empty or unset"},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			path := writeFile(t, dir, "backflow.yaml", base+tc.audit)
			bc, err := botconfig.LoadConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			c := Wire(bc)
			sources := c.Sources()
			var asked []observe.ObjectKey
			concerned := func(objects []observe.ObjectKey) []string {
				asked = append(asked, objects...)
				return nil
			}
			routes, attach, err := serveLive(c, sources, concerned, nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			attach(nil) // no server: a request for a cycle is dropped
			if ks := sources[0].(*source.KubeSource); ks.OnChange == nil {
				t.Error("a watched object's change does not ask for a cycle")
			} else {
				changed := observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-0"}
				ks.OnChange(changed)
				if len(asked) != 1 || asked[0] != changed {
					t.Errorf("why: a change cycles the repositories its object concerns, not all; asked for %v", asked)
				}
			}
			h, ok := routes["POST /audit"]
			if ok != tc.routes {
				t.Fatalf("routes %v", routes)
			}
			if !ok {
				return
			}
			for _, auth := range []struct {
				header string
				status int
			}{{"Bearer wrong", http.StatusUnauthorized}, {"Bearer s3cret", http.StatusOK}} {
				req := httptest.NewRequest(http.MethodPost, "/audit", strings.NewReader(auditBatch))
				req.Header.Set("Authorization", auth.header)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != auth.status {
					t.Errorf("%s: status %d, want %d", auth.header, rec.Code, auth.status)
				}
			}
			// The audit event names a resource, not a kind: the object is
			// asked about under any kind.
			if want := (observe.ObjectKey{APIVersion: "apps/v1", Namespace: "redis", Name: "redis-replicas"}); len(asked) != 2 || asked[1] != want {
				t.Errorf("why: an accepted audit batch cycles the repositories of its objects; asked for %v, want then %v", asked, want)
			}
			key := observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}
			if evs := c.AuditLog().EventsOf(key); len(evs) != 1 || evs[0].User != "alice" {
				t.Errorf("why: what the webhook accepts is what the sources join with; events %+v", evs)
			}
		})
	}
}
