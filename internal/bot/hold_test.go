package bot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/hold"
	"github.com/backflow-dev/backflow/internal/observe"
)

// appliedPort is a hold port with one sealed hold whose applier answers
// applied and err.
type appliedPort struct {
	ann     map[string]string
	applied string
	err     error
}

func (p *appliedPort) Annotated(context.Context) ([]AnnotatedObject, error) {
	return []AnnotatedObject{{Cluster: "prod-1", UID: "u-1", Annotations: p.ann,
		Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "web", Name: "web"}}}, nil
}
func (p *appliedPort) AppliedRevision(context.Context, string, string, string) (string, error) {
	return p.applied, p.err
}
func (*appliedPort) PatchObject(context.Context, string, observe.ObjectKey, []byte) error { return nil }
func (*appliedPort) PatchApplier(context.Context, string, string, string, []byte) error   { return nil }

// TestLiveHoldsAppliedRevision: a flux-helm applier whose Kustomization
// applied the merge before helm-controller acted on it is read as nothing
// applied yet and said so at info, not as an applier that could not be
// read; a revision read is carried to the hold's decision.
func TestLiveHoldsAppliedRevision(t *testing.T) {
	key := []byte("commit-key")
	since := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	sealed, err := hold.Seal(key, hold.Record{Repo: "acme/gitops", Branch: "backflow/prod/web", Fingerprint: "sha256:ab",
		Cluster: "prod-1", Object: "apps/v1|Deployment|web|web", UID: "u-1", Fields: []string{"spec.replicas"},
		Controller: hold.FluxHelm, Applier: "flux-system/web", Since: since, Until: since.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	ann := map[string]string{hold.Annotation: sealed, hold.HelmDriftDetection: hold.Disabled}
	for _, tc := range []struct {
		why     string
		applied string
		err     error
		want    string // the log line's level and message
	}{
		{"helm-controller has not acted on the applied commit yet: kept, said at info",
			"", fmt.Errorf("HelmRelease flux-system/web: Ready is Unknown: %w", hold.ErrNotApplied),
			"level=INFO msg=\"applied revision not yet acted on\""},
		{"the applier could not be read: a warning",
			"", errors.New("HelmRelease flux-system/web has no kustomize.toolkit.fluxcd.io/name"),
			"level=WARN msg=\"applier not read\""},
		{"the merge applied and acted on: carried to the decision, nothing logged", "main@sha1:abc", nil, ""},
	} {
		var logs bytes.Buffer
		b := &Bot{opts: Options{Holds: &appliedPort{ann: ann, applied: tc.applied, err: tc.err}, CommitKey: key},
			log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		live, err := b.liveHolds(context.Background())
		if err != nil || len(live) != 1 || live[0].State != hold.Sealed || live[0].Applied != tc.applied {
			t.Fatalf("why: %s: live %+v, %v", tc.why, live, err)
		}
		if got := logs.String(); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("why: %s: logged %q, want %q", tc.why, got, tc.want)
		}
	}
}
