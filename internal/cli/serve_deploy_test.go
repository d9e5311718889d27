package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/botconfig"
)

// These tests keep the deployment files, the GitHub App manifest and the
// workflows from rotting silently: they must parse, and carry the keys that
// make them do their job.

const repoRoot = "../.."

func readYAML(t *testing.T, rel string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return doc
}

// dig walks keys and list indexes ("spec", "template", 0, ...).
func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a mapping", path[:i])
			}
			if v, ok = m[k]; !ok {
				t.Fatalf("%v: missing", path[:i+1])
			}
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("%v: not a list with index %d", path[:i], k)
			}
			v = l[k]
		}
	}
	return v
}

func TestKubernetesManifests(t *testing.T) {
	kust := readYAML(t, "deploy/kubernetes/kustomization.yaml")
	if kust["kind"] != "Kustomization" {
		t.Fatalf("kustomization kind %v", kust["kind"])
	}
	kinds := map[string]map[string]any{}
	for _, r := range dig(t, kust, "resources").([]any) {
		doc := readYAML(t, filepath.Join("deploy/kubernetes", r.(string)))
		kind, _ := doc["kind"].(string)
		if doc["apiVersion"] == nil || kind == "" || dig(t, doc, "metadata", "name") == nil {
			t.Errorf("%s: apiVersion, kind and metadata.name are required", r)
		}
		kinds[kind] = doc
	}
	for _, want := range []string{"Deployment", "Service", "ServiceAccount", "ConfigMap"} {
		if kinds[want] == nil {
			t.Errorf("no %s among the kustomization's resources", want)
		}
	}
	dep := kinds["Deployment"]
	if dep == nil {
		return
	}
	pod := dig(t, dep, "spec", "template", "spec")
	c := dig(t, pod, "containers", 0)
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if got := dig(t, c, probe, "httpGet", "path"); got != path {
			t.Errorf("%s path %v, want %s", probe, got, path)
		}
	}
	if dig(t, pod, "securityContext", "runAsNonRoot") != true {
		t.Error("the pod does not require a non-root user")
	}
	if dig(t, c, "securityContext", "readOnlyRootFilesystem") != true || dig(t, c, "securityContext", "allowPrivilegeEscalation") != false {
		t.Error("the container's root filesystem is writable or it may escalate privileges")
	}
	if dig(t, c, "resources", "requests") == nil || dig(t, c, "resources", "limits") == nil {
		t.Error("the container has no resource requests or limits")
	}
	if got := dig(t, pod, "serviceAccountName"); got != dig(t, kinds["ServiceAccount"], "metadata", "name") {
		t.Errorf("serviceAccountName %v is not the manifest's ServiceAccount", got)
	}
	var secret, config bool
	for _, v := range dig(t, pod, "volumes").([]any) {
		vm := v.(map[string]any)
		if s, ok := vm["secret"].(map[string]any); ok && s["secretName"] != nil {
			secret = true
		}
		if cm, ok := vm["configMap"].(map[string]any); ok && cm["name"] == dig(t, kinds["ConfigMap"], "metadata", "name") {
			config = true
		}
	}
	if !secret || !config {
		t.Errorf("volumes: secret reference %v, the ConfigMap %v; want both", secret, config)
	}
	// The ConfigMap's config must be a valid bot config with a strict
	// server section, listening on the container's port, whose secret files
	// are in the mounted Secret.
	text := dig(t, kinds["ConfigMap"], "data", "config.yaml").(string)
	bc, err := botconfig.ParseConfig("ConfigMap config.yaml", []byte(text))
	if err != nil {
		t.Fatalf("ConfigMap config.yaml is not a valid bot config: %v", err)
	}
	srv, err := botconfig.ParseServerSection("ConfigMap config.yaml", []byte(text))
	if err != nil {
		t.Fatalf("ConfigMap config.yaml: server section: %v", err)
	}
	port := dig(t, c, "ports", 0, "containerPort").(int)
	if !strings.HasSuffix(srv.Listen, ":"+strconv.Itoa(port)) {
		t.Errorf("server.listen %q does not match containerPort %d", srv.Listen, port)
	}
	secretMount := ""
	for _, m := range dig(t, c, "volumeMounts").([]any) {
		if m.(map[string]any)["name"] == "secrets" {
			secretMount = m.(map[string]any)["mountPath"].(string) + "/"
		}
	}
	files := []string{bc.GitHub.PrivateKeyFile, srv.Webhook.SecretFile}
	if o := srv.Observations; o != nil {
		files = append(files, o.TokenFile, o.SecretFile)
	}
	for _, f := range files {
		if f != "" && (secretMount == "" || !strings.HasPrefix(f, secretMount)) {
			t.Errorf("secret file %s is not in the mounted Secret (%q)", f, secretMount)
		}
	}
}

func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy/Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(text, -1)
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got %d FROM lines", len(froms))
	}
	if final := froms[len(froms)-1][1]; !strings.HasPrefix(final, "gcr.io/distroless/static") {
		t.Errorf("final base %s, want distroless static", final)
	}
	for _, want := range []string{"CGO_ENABLED=0", "./cmd/backflow ", "./cmd/backflow-core", "/out/backflow /out/backflow-core /usr/local/bin/", `ENTRYPOINT ["/usr/local/bin/backflow"]`} {
		if !strings.Contains(text, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	user := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindStringSubmatch(text)
	if user == nil || strings.HasPrefix(user[1], "0") || strings.HasPrefix(user[1], "root") {
		t.Errorf("Dockerfile USER %v, want a non-root user", user)
	}
}

func TestGitHubAppManifest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "config/github-app-manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name        string            `json:"name"`
		Hook        map[string]any    `json:"hook_attributes"`
		Permissions map[string]string `json:"default_permissions"`
		Events      []string          `json:"default_events"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"contents": "write", "pull_requests": "write", "checks": "write", "issues": "write", "metadata": "read"}
	if len(m.Permissions) != len(want) {
		t.Errorf("permissions %v, want exactly %v", m.Permissions, want)
	}
	for k, v := range want {
		if m.Permissions[k] != v {
			t.Errorf("permission %s = %q, want %q", k, m.Permissions[k], v)
		}
	}
	events := slices.Sorted(slices.Values(m.Events))
	if !slices.Equal(events, []string{"check_run", "pull_request", "push"}) {
		t.Errorf("events %v, want check_run, pull_request, push", events)
	}
	if url, _ := m.Hook["url"].(string); !strings.HasSuffix(url, "/webhook") {
		t.Errorf("webhook URL %q does not end in /webhook", url)
	}
}

// runScripts returns the run: scripts of every step of every job.
func runScripts(t *testing.T, wf map[string]any) []string {
	t.Helper()
	var out []string
	for _, job := range dig(t, wf, "jobs").(map[string]any) {
		for _, step := range dig(t, job, "steps").([]any) {
			if run, ok := step.(map[string]any)["run"].(string); ok {
				out = append(out, run)
			}
		}
	}
	return out
}

func TestWorkflows(t *testing.T) {
	ci := readYAML(t, ".github/workflows/ci.yml")
	receipts := readYAML(t, ".github/workflows/receipts.yml")
	for name, wf := range map[string]map[string]any{"ci": ci, "receipts": receipts} {
		if dig(t, wf, "on", "pull_request") == nil && !hasKey(dig(t, wf, "on"), "pull_request") {
			t.Errorf("%s: does not run on pull requests", name)
		}
		for _, run := range runScripts(t, wf) {
			// Expressions expanded inside scripts are a script-injection
			// hole (a branch name is attacker-chosen); pass them through env.
			if strings.Contains(run, "${{") {
				t.Errorf("%s: a run script expands ${{ }} directly:\n%s", name, run)
			}
		}
	}
	ciRuns := strings.Join(runScripts(t, ci), "\n")
	for _, want := range []string{"make test", "make build", "make tidy-check"} {
		if !strings.Contains(ciRuns, want) {
			t.Errorf("ci does not run %q (it mirrors the Makefile)", want)
		}
	}
	runs := strings.Join(runScripts(t, receipts), "\n")
	for _, want := range []string{
		`git cat-file -e "${base}:${REPO_CONFIG}"`,                        // the repo config comes from the base branch
		`backflow" verify --repo . --base "${base}" --head "${HEAD_SHA}"`, // and the check reads config and policy there
		`--config "${REPO_CONFIG}"`,
	} {
		if !strings.Contains(runs, want) {
			t.Errorf("receipts workflow lacks %q", want)
		}
	}
	if strings.Contains(runs, `git show "${HEAD_SHA}:${policy}"`) {
		t.Error("receipts workflow reads the policy from the pull request's head")
	}
	if dig(t, receipts, "jobs", "verify", "name") != "verify" {
		t.Error("the receipts job is not named verify (the required check's name)")
	}
}

func hasKey(v any, key string) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[key]
	return ok
}

// uses returns the uses: of every step of every job.
func uses(t *testing.T, wf map[string]any) []string {
	t.Helper()
	var out []string
	for _, job := range dig(t, wf, "jobs").(map[string]any) {
		for _, step := range dig(t, job, "steps").([]any) {
			if u, ok := step.(map[string]any)["uses"].(string); ok {
				out = append(out, u)
			}
		}
	}
	return out
}

// TestWorkflowPins holds every workflow to actions pinned by commit SHA,
// the receipts check to a released backflow (never latest), and the
// release workflow to its job: on a tag, the image without a daemon pushed
// with crane, checksums and SBOMs.
func TestWorkflowPins(t *testing.T) {
	pinned := regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40}$`)
	files, err := filepath.Glob(filepath.Join(repoRoot, ".github/workflows/*.yml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("workflows %v (%v)", files, err)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(repoRoot, f)
		wf := readYAML(t, rel)
		for _, u := range uses(t, wf) {
			if !pinned.MatchString(u) {
				t.Errorf("%s: %s is not pinned by a full commit SHA", rel, u)
			}
		}
		for _, run := range runScripts(t, wf) {
			if strings.Contains(run, "${{") {
				t.Errorf("%s: a run script expands ${{ }} directly:\n%s", rel, run)
			}
			if strings.Contains(run, "@latest") {
				t.Errorf("%s: installs @latest:\n%s", rel, run)
			}
		}
	}
	receipts := readYAML(t, ".github/workflows/receipts.yml")
	def := dig(t, receipts, "on", "workflow_call", "inputs", "backflow-version", "default").(string)
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(def) {
		t.Errorf("receipts.yml installs backflow %q by default, want a released version", def)
	}
	if env := dig(t, receipts, "jobs", "verify", "env", "BACKFLOW_VERSION").(string); !strings.Contains(env, "'"+def+"'") {
		t.Errorf("receipts.yml's BACKFLOW_VERSION %q does not fall back to %s", env, def)
	}
	release := readYAML(t, ".github/workflows/release.yml")
	tags := dig(t, release, "on", "push", "tags").([]any)
	if len(tags) != 1 || tags[0] != "v*" {
		t.Errorf("release runs on tags %v, want v*", tags)
	}
	runs := strings.Join(runScripts(t, release), "\n")
	for _, want := range []string{"make test", "make image", "crane\" push bin/image", "sha256sum", "cyclonedx-gomod", "gh release create", "CGO_ENABLED=0"} {
		if !strings.Contains(runs, want) {
			t.Errorf("release workflow lacks %q", want)
		}
	}
}

// TestChartServeFlags holds the chart's Deployment to flags backflow serve
// takes: a renamed flag would stop every pod at start.
func TestChartServeFlags(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy/chart/backflow/templates/deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	flags := regexp.MustCompile(`(?m)^\s+- (--[a-z-]+)`).FindAllStringSubmatch(string(data), -1)
	if len(flags) < 4 {
		t.Fatalf("found %d flags in the chart's Deployment", len(flags))
	}
	serve := newServeCmd()
	for _, f := range flags {
		if serve.Flags().Lookup(strings.TrimPrefix(f[1], "--")) == nil {
			t.Errorf("the chart passes %s, which backflow serve does not take", f[1])
		}
	}
}
