package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCubScoutContract plans each cub-scout fixture on its own and checks the
// outcome the README's contract table gives it, so that the table, the
// fixtures and the code cannot drift apart.
func TestCubScoutContract(t *testing.T) {
	dir := filepath.Join("..", "..", "internal", "plan", "testdata", "scenarios", "cub-scout")
	tests := []struct {
		fixture string
		why     string
		// outcome is the decision's outcome, "error", "trigger", "notice" or
		// "ignored"; want is a substring of its reason, error or message.
		outcome string
		want    []string
		// not are substrings no reason, error or message may hold.
		not []string
	}{
		{"trace-diff.redis-replicas.json", "changed: \"-\" live is ambiguous, neither a removal nor a value, and never written; an unescaped label key is escaped", "deny",
			[]string{"ambiguous: spec.template.spec.containers[0].resources.requests.cpu", `field-not-accepted: metadata.labels.app\.kubernetes\.io/managed-by`}, nil},
		{"trace-diff.eu-west.json", "changed: a list length and a %v map are structure, denied as such and never stale; the policy's escaped label path matches cub-scout's", "deny",
			[]string{"structural: spec.template.spec.containers[0].env", "structural: spec.template.spec.securityContext"}, nil},
		{"trace-diff.matched.json", "matched: no fields, observed matching desired", "noop", []string{"observed matching desired"}, nil},
		{"trace-diff.missing.json", "missing: an error naming the object, never noop", "error", []string{"missing: apps/v1|StatefulSet|redis|redis-headless was not found live"}, nil},
		{"trace-diff.inconclusive.json", "inconclusive: an error naming the omission, never noop", "error", []string{"inconclusive", "live object could not be read"}, nil},
		{"trace-diff.secret.json", "a Secret's inconclusive result names the omission, not read: required", "error", []string{"Secret payload comparison omitted"}, nil},
		{"watch.drift-events.jsonl", "a DRIFT finding is a trigger on the scope's cluster with its owner; STATE and discovery are not", "trigger", []string{"prod-us-east-1", "Flux"}, nil},
		{"watch.drift-events.jsonl", "ownership.changed to Native is a notice", "notice", []string{"from Flux to Native"}, nil},
		{"watch.default-cluster.jsonl", "cub-scout's default cluster names no cluster", "trigger", []string{`"cluster": ""`}, nil},
		{"receipt.object-set-diff.json", "an object-set-diff receipt's changed object is an observation; the receipt names no cluster", "unmapped", []string{"names no cluster"}, nil},
		{"trace-diff.float-rendered.json", "a number printed as a float64 (1.073741824e+09) against its digits is no change; 1e+06 is 1000000", "deny",
			[]string{"actor-unknown", "spec.minReadySeconds"}, []string{"limits.memory"}},
		{"trace-diff.configmap-strings.json", "a desired \"-\" the values file holds as \"\" or \"-\" is not stale; map[a:c] and <nil> in a ConfigMap's data are strings", "deny",
			[]string{"actor-unknown"}, []string{"structural", "field-removed", "ambiguous"}},
		{"trace-diff.configmap-ambiguous.json", "a live \"-\" (\"\", \"-\" or absent) is ambiguous, never a removal", "deny",
			[]string{"ambiguous: data.blank", "ambiguous: data.dash", "the Kubernetes watch"}, []string{"field-removed"}},
		{"snapshot.json", "cub-scout snapshot's inventory is named, not read as a malformed observation", "error",
			[]string{"not an observation: this is the output of cub-scout snapshot", "trace --diff --format json"}, []string{"unknown key"}},
		{"map-list.json", "cub-scout map list --json is named once for its whole list", "error",
			[]string{"not an observation: this is the output of cub-scout map list --json", "and 2 more documents like it"}, []string{"unknown key"}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+"/"+tt.outcome, func(t *testing.T) {
			obs := t.TempDir()
			data, err := os.ReadFile(filepath.Join(dir, "observations", tt.fixture))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(obs, tt.fixture), data, 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI(t, "plan", "--repo", filepath.Join(dir, "repo"), "--observations", obs, "--now", "2026-06-18T12:05:00Z", "--format", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if strings.Contains(stdout, `"to": "-"`) {
				t.Errorf("%s: the plan carries cub-scout's placeholder as a value to write:\n%s", tt.why, stdout)
			}
			var res struct {
				Decisions []struct {
					Outcome string          `json:"outcome"`
					Reasons []string        `json:"reasons"`
					Receipt json.RawMessage `json:"receipt"`
				} `json:"decisions"`
				Triggers []json.RawMessage `json:"triggers"`
				Notices  []json.RawMessage `json:"notices"`
				Errors   []string          `json:"errors"`
			}
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatal(err)
			}
			var got []string
			switch tt.outcome {
			case "error":
				got = res.Errors
			case "trigger":
				for _, r := range res.Triggers {
					got = append(got, string(r))
				}
			case "notice":
				for _, r := range res.Notices {
					got = append(got, string(r))
				}
			default:
				if len(res.Decisions) != 1 || res.Decisions[0].Outcome != tt.outcome {
					t.Fatalf("%s: want one %s decision, got %s", tt.why, tt.outcome, stdout)
				}
				got = res.Decisions[0].Reasons
				if len(res.Decisions[0].Receipt) > 0 {
					t.Errorf("%s: a %s decision carries a receipt", tt.why, tt.outcome)
				}
			}
			all := strings.Join(got, "\n")
			if len(got) != 1 && tt.outcome != "deny" && tt.outcome != "noop" && tt.outcome != "unmapped" {
				t.Errorf("%s: want exactly one %s, got %q", tt.why, tt.outcome, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("%s: %s %q lacks %q", tt.why, tt.outcome, all, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(all, n) {
					t.Errorf("%s: %s %q holds %q", tt.why, tt.outcome, all, n)
				}
			}
			if strings.Contains(all, "stale") || strings.Contains(all, "read: required") {
				t.Errorf("%s: misleading reason in %q", tt.why, all)
			}
		})
	}
}

func TestPlanRefusesAnEmptyObservationsFile(t *testing.T) {
	dir := filepath.Join("..", "..", "internal", "plan", "testdata", "scenarios", "cub-scout")
	obs := filepath.Join(t.TempDir(), "trace-diff.json")
	if err := os.WriteFile(obs, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "plan", "--repo", filepath.Join(dir, "repo"), "--observations", obs, "--now", "2026-06-18T12:05:00Z", "--format", "json")
	// why: cub-scout failing printed nothing, and plan printed a plan of nothing.
	if code != 2 || stdout != "" || !strings.Contains(stderr, obs+": empty input") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
