package checkout

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
)

// copyCheckout copies the serve test repository, so a case can break it.
func copyCheckout(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "gitops")
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("testdata", "serve", "gitops"))); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestPlanCheckout(t *testing.T) {
	now := time.Date(2026, 6, 18, 12, 5, 0, 0, time.UTC)
	obsDir := t.TempDir()
	obs := writeFile(t, obsDir, "redis.yaml", nativeDoc("prod-us-east-1", "2026-06-18T12:00:00Z", "audit-log", 4))
	writeFile(t, obsDir, "broken.yaml", "kind: ObjectStateObserved\n")
	cases := []struct {
		why   string
		spoil func(repo string)
		paths []string
		// err is the sentinel of the error; outcome the one decision's.
		err     error
		outcome plan.Outcome
		errs    []string
	}{
		{why: "alice's pre-authorized scale is allowed", paths: []string{obs}, outcome: plan.Allow},
		{why: "a document that does not parse leads the errors; the others still plan", paths: []string{obsDir}, outcome: plan.Allow, errs: []string{"broken.yaml"}},
		{why: "a path that does not exist cannot be planned", paths: []string{filepath.Join(obsDir, "nope")}, err: ErrNoObservations},
		{why: "an invalid repo config is the snapshot's error", paths: []string{obs}, err: plan.ErrInvalid,
			spoil: func(repo string) { writeFile(t, repo, ".github/backflow.yaml", "version: 1\nbogus: true\n") }},
		{why: "a missing values file fails its unit closed and says why first", paths: []string{obs}, outcome: plan.Deny, errs: []string{"reading values file envs/prod-us-east/redis/values.yaml"},
			spoil: func(repo string) { os.Remove(filepath.Join(repo, "envs", "prod-us-east", "redis", "values.yaml")) }},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			repo := copyCheckout(t)
			if tc.spoil != nil {
				tc.spoil(repo)
			}
			res, err := PlanCheckout(repo, tc.paths, observe.AttributionAuditLog, now)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Decisions) != 1 || res.Decisions[0].Outcome != tc.outcome {
				t.Fatalf("decisions %+v", res.Decisions)
			}
			for i, want := range tc.errs {
				if i >= len(res.Errors) || !strings.Contains(res.Errors[i], want) {
					t.Errorf("errors %q, want %q at %d", res.Errors, want, i)
				}
			}
		})
	}
}
