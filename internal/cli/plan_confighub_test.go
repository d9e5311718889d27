package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/confighub/confighubtest"
)

// TestPlanConfigHubUnit: `backflow plan --confighub-url` reads a unit's
// ConfigHub Unit and plans alice's change into it as a revision, writing
// nothing; without the flags no plan is made, and stderr names the Unit.
func TestPlanConfigHubUnit(t *testing.T) {
	hub := confighubtest.New(confighubtest.Options{Tokens: map[string]string{"tok": "0b07b07b-0000-4000-8000-000000000001"}})
	url, stop, err := hub.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	hub.AddSpace("prod")
	data := "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n  namespace: shop\nspec:\n  replicas: 3 # sized for normal load\n"
	if _, err := hub.AddUnit("prod", "db", confighubtest.ToolchainKubernetesYAML, []byte(data), "b0b00000-0000-4000-8000-000000000002"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"repo/.github/backflow.yaml": "version: 1\npolicy: .github/policy.yaml\nenvironments:\n  prod:\n    clusters: [prod-1]\n" +
			"units:\n  - name: db\n    environment: prod\n    confighub: {space: prod, unit: db}\n    objects: [\"apps/v1|StatefulSet|shop|db\"]\n" +
			"roles:\n  sre:\n    users: [alice]\n    attribution: [audit-log]\n",
		"repo/.github/policy.yaml": "apiVersion: backflow.dev/v1alpha1\nkind: ReverseReconcilePolicy\nmetadata: {name: db}\nspec:\n  default: deny\n" +
			"  rules:\n    - role: sre\n      reason: scale\n      mayAccept:\n        - field: spec.replicas\n          objects: [\"apps/v1|StatefulSet|shop|db\"]\n          environments: [prod]\n",
		"obs.yaml": "apiVersion: backflow.dev/v1alpha1\nkind: ObjectStateObserved\nmetadata: {name: db}\nspec:\n  source: kubernetes\n  cluster: prod-1\n" +
			"  observedAt: \"2026-06-18T12:00:00Z\"\n  object: \"apps/v1|StatefulSet|shop|db\"\n  change: {actor: alice, attribution: audit-log, intent: sale}\n" +
			"  fields:\n    - field: spec.replicas\n      live: 4\n      desired: 3\n",
		"token": "tok\n",
	}
	for p, text := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	repo, obs := filepath.Join(dir, "repo"), filepath.Join(dir, "obs.yaml")
	code, out, errOut := runCLI(t, "plan", "--repo", repo, "--observations", obs, "--format", "json", "--now", "2026-06-18T12:05:00Z",
		"--confighub-url", url, "--confighub-token-file", filepath.Join(dir, "token"))
	if code != 0 || !strings.Contains(out, `"outcome": "allow"`) || !strings.Contains(out, "confighub-revision") ||
		!strings.Contains(out, "confighub:prod/db@2") {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	if n := len(hub.Revisions("prod", "db")); n != 1 || hub.Requests(confighubtest.OpUploadUnitData) != 0 {
		t.Fatalf("plan wrote: %d revisions, %d uploads", n, hub.Requests(confighubtest.OpUploadUnitData))
	}
	code, out, errOut = runCLI(t, "plan", "--repo", repo, "--observations", obs, "--format", "json", "--now", "2026-06-18T12:05:00Z")
	// A Unit that cannot be read is as a values file that cannot be: no
	// plan, exit 2, naming it.
	if code != 2 || out != "" || !strings.Contains(errOut, "reading confighub:prod/db of unit db (prod): no ConfigHub server is given (--confighub-url and --confighub-token-file)") {
		t.Fatalf("without the flags: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	if code, _, errOut := runCLI(t, "plan", "--repo", repo, "--observations", obs, "--confighub-url", url); code != 2 || !strings.Contains(errOut, "--confighub-token-file") {
		t.Fatalf("a URL without a token: exit %d, stderr %q", code, errOut)
	}
}
