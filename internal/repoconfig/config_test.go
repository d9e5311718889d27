package repoconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/google/go-cmp/cmp"
)

const examplePath = "../../config/repo/backflow.yaml"

func TestParseExample(t *testing.T) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(Path, data)
	if err != nil {
		t.Fatalf("the example config must be valid: %v", err)
	}
	if c.Policy != ".github/reverse-reconcile-policy.yaml" || len(c.Units) != 2 || len(c.Environments) != 2 {
		t.Errorf("example read wrongly: %+v", c)
	}
	if env, ok := c.EnvironmentOf("prod-us-east-1"); !ok || env != "prod-us-east" {
		t.Errorf("prod-us-east-1 -> %q %v", env, ok)
	}
	u, ok := c.UnitFor("prod-us-east", "apps/v1|StatefulSet|redis|redis-replicas")
	if !ok || u.ValuesFiles[0] != "envs/prod-us-east/redis/values.yaml" || c.Branch(u) != "backflow/prod-us-east/redis" {
		t.Errorf("unit for redis-replicas: %+v %v", u, ok)
	}
	if got := c.RolesFor("alice", []string{"sre"}); !cmp.Equal(got, []string{"platform-sre"}) {
		t.Errorf("alice's roles: %v", got)
	}
	if !c.IgnoresField("status.readyReplicas") || c.IgnoresField("spec.replicas") {
		t.Error("ignoreFields of the example")
	}
}

// base is a small valid config the error cases change one thing in.
const base = `version: 1
policy: .github/policy.yaml
environments:
  prod:
    clusters: [c1, c2]
  dev:
    clusters: [d1]
units:
  - name: redis
    environment: prod
    valuesFiles: [envs/prod/values.yaml]
    objects: ["apps/v1|StatefulSet|redis|*"]
roles:
  sre:
    groups: [sre]
`

func TestBaseIsValid(t *testing.T) {
	if _, err := Parse(Path, []byte(base)); err != nil {
		t.Fatal(err)
	}
}

func TestValidationErrors(t *testing.T) {
	unit := func(extra string) string {
		return strings.Replace(base, "roles:", "  - name: other\n    environment: prod\n    valuesFiles: [envs/prod/other.yaml]\n"+extra+"roles:", 1)
	}
	tests := []struct {
		why    string
		config string
		want   string
	}{
		{"a misspelt key is named with its dotted path", strings.Replace(base, "valuesFiles:", "valuesFile:", 1), ".github/backflow.yaml: units[0].valuesFile: unknown key"},
		{"unknown top-level keys are errors too", base + "colour: red\n", ".github/backflow.yaml: colour: unknown key"},
		{"a duplicate key is ambiguous", base + "policy: x.yaml\n", ".github/backflow.yaml: policy: duplicate key"},
		{"the version is required", strings.Replace(base, "version: 1\n", "", 1), "version: required"},
		{"only version 1 is read", strings.Replace(base, "version: 1", "version: 2", 1), "version: unsupported version 2: want 1"},
		{"types are checked", strings.Replace(base, "version: 1", "version: one", 1), "version: want an integer"},
		{"a list where a mapping is expected", base + "pullRequests: [x]\n", "pullRequests: want a mapping"},
		{"YAML 1.1 booleans are not booleans here", base + "paused: yes\n", "paused: want true or false"},
		{"the policy is required", strings.Replace(base, "policy: .github/policy.yaml\n", "", 1), "policy: required"},
		{"paths may not climb out of the repository", strings.Replace(base, "envs/prod/values.yaml", "../values.yaml", 1), "units[0].valuesFiles[0]: \"../values.yaml\": must stay inside the repository"},
		{"absolute paths are refused", strings.Replace(base, "envs/prod/values.yaml", "/etc/values.yaml", 1), "must be relative to the repository root"},
		{"backslashes are refused (a Windows path)", strings.Replace(base, "envs/prod/values.yaml", `'envs\prod.yaml'`, 1), "use / between path elements"},
		{"NUL bytes are refused", strings.Replace(base, "envs/prod/values.yaml", `"envs/a\0b.yaml"`, 1), "contains a NUL byte"},
		{"unclean paths are refused, so comparisons are exact", strings.Replace(base, "envs/prod/values.yaml", "./envs//values.yaml", 1), "not a clean path"},
		{".git is never a values file", strings.Replace(base, "envs/prod/values.yaml", ".git/config", 1), "must not be inside .git"},
		{"the repo config is never written", strings.Replace(base, "envs/prod/values.yaml", ".github/backflow.yaml", 1), "is the repo config"},
		{"the policy is never written", strings.Replace(base, "envs/prod/values.yaml", ".github/policy.yaml", 1), "is the policy"},
		{"receipts are never values (default dir)", strings.Replace(base, "envs/prod/values.yaml", ".backflow/receipts/r.yaml", 1), "is under receipts.dir (.backflow/receipts)"},
		{"receipts are never values (configured dir)", strings.Replace(base, "envs/prod/values.yaml", "receipts/r.yaml", 1) + "receipts: {dir: receipts}\n", "is under receipts.dir (receipts)"},
		{"CODEOWNERS at the root", strings.Replace(base, "envs/prod/values.yaml", "CODEOWNERS", 1), "is CODEOWNERS"},
		{"CODEOWNERS in .github", strings.Replace(base, "envs/prod/values.yaml", ".github/CODEOWNERS", 1), "is CODEOWNERS"},
		{"CODEOWNERS in docs, in any case", strings.Replace(base, "envs/prod/values.yaml", "docs/codeowners", 1), "is CODEOWNERS"},
		{"workflows are never written", strings.Replace(base, "envs/prod/values.yaml", ".github/workflows/ci.yaml", 1), "is a GitHub workflow"},
		{"a unit needs values files", strings.Replace(base, "    valuesFiles: [envs/prod/values.yaml]\n", "", 1), "units[0].valuesFiles: required"},
		{"a unit names one store, not two", strings.Replace(base, "    valuesFiles: [envs/prod/values.yaml]\n", "    valuesFiles: [envs/prod/values.yaml]\n    manifests: [deploy/prod]\n", 1), "units[0]: names more than one of valuesFiles, manifests, kustomization and confighub"},
		{"manifests and a kustomization are not both the store", strings.Replace(base, "    valuesFiles: [envs/prod/values.yaml]\n", "    kustomization: overlays/prod\n    manifests: [deploy/prod]\n", 1), "units[0]: names more than one of valuesFiles, manifests, kustomization and confighub"},
		{"manifests stay in the repository", strings.Replace(base, "    valuesFiles: [envs/prod/values.yaml]\n", "    manifests: [../deploy]\n", 1), "units[0].manifests[0]: \"../deploy\": must stay inside the repository"},
		{"a manifest listed twice", strings.Replace(base, "    valuesFiles: [envs/prod/values.yaml]\n", "    manifests: [deploy, deploy]\n", 1), "units[0].manifests[1]: deploy is listed twice"},
		{"manifests are never the workflows", strings.Replace(base, "    valuesFiles: [envs/prod/values.yaml]\n", "    manifests: [.github/workflows/deploy.yaml]\n", 1), "units[0].manifests[0]: .github/workflows/deploy.yaml is a GitHub workflow"},
		{"a kustomization stays in the repository", strings.Replace(base, "    valuesFiles: [envs/prod/values.yaml]\n", "    kustomization: /overlays/prod\n", 1), "units[0].kustomization: \"/overlays/prod\": must be relative"},
		{"manifests have no valuesRoot", strings.Replace(base, "    valuesFiles: [envs/prod/values.yaml]\n", "    manifests: [deploy]\n    valuesRoot: {document: HelmRelease/redis, path: spec.values}\n", 1), "units[0].valuesRoot: only with valuesFiles"},
		{"manifests of two environments may not overlap", unit("  - name: web\n    environment: prod\n    manifests: [deploy]\n    objects: [\"v1|Service|web|*\"]\n  - name: web\n    environment: dev\n    manifests: [deploy/staging]\n    objects: [\"v1|Service|web|*\"]\n"), "units[3].manifests[0]: deploy/staging is also read by units[2] (web) in environment prod as deploy"},
		{"an overlay belongs to one environment", unit("  - name: web\n    environment: prod\n    kustomization: overlays/prod\n    objects: [\"v1|Service|web|*\"]\n  - name: web\n    environment: dev\n    kustomization: overlays/prod\n    objects: [\"v1|Service|web|*\"]\n"), "units[3].kustomization: overlays/prod is also units[2]'s (web) in environment prod"},
		{"a values file listed twice", strings.Replace(base, "[envs/prod/values.yaml]", "[envs/prod/values.yaml, envs/prod/values.yaml]", 1), "units[0].valuesFiles[1]: envs/prod/values.yaml is listed twice"},
		{"unit environments must exist", strings.Replace(base, "environment: prod", "environment: staging", 1), "units[0].environment: \"staging\" is not in environments"},
		{"a unit needs objects", strings.Replace(base, "    objects: [\"apps/v1|StatefulSet|redis|*\"]\n", "", 1), "units[0].objects: required"},
		{"object globs have four segments", strings.Replace(base, "apps/v1|StatefulSet|redis|*", "StatefulSet|redis|*", 1), "units[0].objects[0]: must be an object key apiVersion|kind|namespace|name"},
		{"** is not an object glob", strings.Replace(base, "redis|*", "redis|**", 1), "`**` is not a glob here"},
		{"two units may not claim the same object in one environment", unit("    objects: [\"apps/v1|*|redis|redis-*\"]\n"), `units[1].objects[0]: "apps/v1|*|redis|redis-*" overlaps "apps/v1|StatefulSet|redis|*" of units[0] (redis) in environment prod`},
		{"unit names are unique within an environment", unit("    objects: [\"v1|Service|x|y\"]\n  - name: other\n    environment: prod\n    valuesFiles: [e.yaml]\n    objects: [\"v1|Service|x|z\"]\n"), "units[2].name: unit other is already defined in environment prod by units[1]"},
		{"unit names go into branch names", strings.Replace(base, "name: redis", "name: red is", 1), "units[0].name: \"red is\": want letters"},
		{"valuesRoot documents are Kind/name", strings.Replace(base, "    objects:", "    valuesRoot: {document: HelmRelease, path: spec.values}\n    objects:", 1), "units[0].valuesRoot.document: \"HelmRelease\": want Kind/name"},
		{"valuesRoot paths parse", strings.Replace(base, "    objects:", "    valuesRoot: {document: HelmRelease/r, path: spec..values}\n    objects:", 1), "units[0].valuesRoot.path: path"},
		{"a manifest is read the same way by every unit", strings.Replace(base, "    objects: [\"apps/v1|StatefulSet|redis|*\"]\n", "    valuesRoot: {document: HelmRelease/redis, path: spec.values}\n    objects: [\"apps/v1|StatefulSet|redis|*\"]\n  - name: redis\n    environment: dev\n    valuesFiles: [envs/prod/values.yaml, envs/dev/values.yaml]\n    objects: [\"apps/v1|StatefulSet|redis|*\"]\n", 1),
			"units[1].valuesFiles[0]: envs/prod/values.yaml is read as a plain values file here but as the spec.values of HelmRelease/redis by units[0] (redis)"},
		{"a manifest's document is one for every unit", strings.Replace(base, "    objects: [\"apps/v1|StatefulSet|redis|*\"]\n", "    valuesRoot: {document: HelmRelease/redis, path: spec.values}\n    objects: [\"apps/v1|StatefulSet|redis|*\"]\n  - name: redis\n    environment: dev\n    valuesFiles: [envs/prod/values.yaml]\n    valuesRoot: {document: HelmRelease/redis-dev, path: spec.values}\n    objects: [\"apps/v1|StatefulSet|redis|*\"]\n", 1),
			"units[1].valuesFiles[0]: envs/prod/values.yaml is read as the spec.values of HelmRelease/redis-dev here"},
		{"a chart names itself", strings.Replace(base, "    objects:", "    chart: {version: 1.0.0}\n    objects:", 1), "units[0].chart.name: required when chart is given"},
		{"a rendered chart needs a release namespace", strings.Replace(base, "    objects: [\"apps/v1|StatefulSet|redis|*\"]\n", "    objects: [\"apps/v1|StatefulSet|*|*\"]\n    chart: {name: redis, path: charts/redis}\n", 1), "units[0].chart.namespace: required"},
		{"a chart path stays in the repository", strings.Replace(base, "    objects:", "    chart: {name: redis, path: ../charts/redis}\n    objects:", 1), "units[0].chart.path"},
		{"kubeVersion is a Kubernetes version", strings.Replace(base, "    objects:", "    chart: {name: redis, path: charts/redis, kubeVersion: latest}\n    objects:", 1), "units[0].chart.kubeVersion: \"latest\" is not a Kubernetes version"},
		{"one chart source", strings.Replace(base, "    objects:", "    chart: {name: redis, version: 1.0.0, path: charts/redis, oci: oci://r.example/c/redis}\n    objects:", 1), "units[0].chart: give at most one of path, repository and oci"},
		{"a repository is an http URL", strings.Replace(base, "    objects:", "    chart: {name: redis, version: 1.0.0, repository: ftp://charts.example}\n    objects:", 1), "units[0].chart.repository: \"ftp://charts.example\" is not an http or https URL"},
		{"an OCI repository is given as oci", strings.Replace(base, "    objects:", "    chart: {name: redis, version: 1.0.0, repository: \"oci://r.example/c\"}\n    objects:", 1), "units[0].chart.repository: \"oci://r.example/c\" is an OCI reference: give it as oci"},
		{"no credentials in a repository URL", strings.Replace(base, "    objects:", "    chart: {name: redis, version: 1.0.0, repository: \"https://u:p@charts.example\"}\n    objects:", 1), "holds credentials"},
		{"an OCI reference has no tag", strings.Replace(base, "    objects:", "    chart: {name: redis, version: 1.0.0, oci: \"oci://r.example/c/redis:1.0.0\"}\n    objects:", 1), "units[0].chart.oci: \"oci://r.example/c/redis:1.0.0\" is not an OCI reference"},
		{"an OCI reference starts with oci://", strings.Replace(base, "    objects:", "    chart: {name: redis, version: 1.0.0, oci: \"r.example/c/redis\"}\n    objects:", 1), "units[0].chart.oci: \"r.example/c/redis\" does not start with oci://"},
		{"a fetched chart names its version", strings.Replace(base, "    objects:", "    chart: {name: redis, oci: \"oci://r.example/c/redis\"}\n    objects:", 1), "units[0].chart.version: required with repository or oci"},
		{"a fetched chart is pinned", strings.Replace(base, "    objects:", "    chart: {name: redis, version: \"^23.1.0\", repository: \"https://charts.example\"}\n    objects:", 1), "units[0].chart.version: \"^23.1.0\" is not an exact chart version"},
		{"a fetched chart needs a release namespace", strings.Replace(base, "    objects: [\"apps/v1|StatefulSet|redis|*\"]\n", "    objects: [\"apps/v1|StatefulSet|*|*\"]\n    chart: {name: redis, version: 1.0.0, repository: \"https://charts.example\"}\n", 1), "units[0].chart.namespace: required"},
		{"an environment needs clusters", base + "  # \n", ""},
		{"a cluster in two environments makes observations ambiguous", strings.Replace(base, "[d1]", "[c1]", 1), "is already in environment"},
		{"empty cluster lists are refused", strings.Replace(base, "[d1]", "[]", 1), "environments.dev.clusters: required: at least one cluster"},
		{"unknown cannot be an accepted attribution", base + "    attribution: [unknown]\n", "roles.sre.attribution[0]: unknown cannot be accepted"},
		{"attribution levels are a closed set", base + "    attribution: [root]\n", "roles.sre.attribution[0]: \"root\": want asserted"},
		{"an empty attribution list would accept nothing, silently", base + "    attribution: []\n", "roles.sre.attribution: empty: omit the key for the default [audit-log]"},
		{"identities map to GitHub logins", base + "identities: {alice: \"-bad-\"}\n", "identities.alice: \"-bad-\" is not a GitHub login"},
		{"reviewers are GitHub logins", base + "pullRequests: {reviewers: [\"a b\"]}\n", "pullRequests.reviewers[0]"},
		{"team reviewers are slugs", base + "pullRequests: {teamReviewers: [\"a/b/c\"]}\n", "pullRequests.teamReviewers[0]"},
		{"branch prefixes must be usable in a ref", base + "pullRequests: {branchPrefix: \"bf..x/\"}\n", "pullRequests.branchPrefix: \"bf..x/\": not usable in a branch name"},
		{"merge methods are GitHub's three", base + "autoMerge: {method: fast-forward}\n", "autoMerge.method: \"fast-forward\": want squash, merge or rebase"},
		{"receipts stay in the repository", base + "receipts: {dir: /tmp/r}\n", "receipts.dir: \"/tmp/r\": must be relative"},
		{"ignoreFields globs must parse", base + "ignoreFields: [\"spec..x\"]\n", "ignoreFields[0]: pattern \"spec..x\": empty segment"},
		{"durations are Go durations", base + "followUp: {gracePeriod: ten minutes}\n", "followUp.gracePeriod: want a duration"},
		{"negative grace periods make no sense", base + "followUp: {gracePeriod: -1m}\n", "followUp.gracePeriod: must not be negative"},
		{"modes are a closed set", base + "mode: yolo\n", "mode: \"yolo\": want write-back or observe-only"},
		{"one document only", base + "---\nversion: 1\n", "want one YAML document"},
		{"an empty file is not a config", "", "empty file"},
		{"a syntax error is an invalid config", "version: [1\n", "yaml:"},
		{"an alias bomb stops early", aliasBomb(), "too many nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.why, func(t *testing.T) {
			_, err := Parse(Path, []byte(tt.config))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("%s: %v", tt.why, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("%s: no error, want %q", tt.why, tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: %v is not ErrInvalid", tt.why, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s:\n got %s\nwant %s", tt.why, err, tt.want)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, Path+": ") {
					t.Errorf("%s: error line %q does not name the file", tt.why, line)
				}
			}
		})
	}
}

// aliasBomb is a small file that names one 500-key mapping 500 times.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("version: 1\npolicy: p.yaml\nunits:\n  - &u {")
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&b, "k%d: 1, ", i)
	}
	b.WriteString("name: x}\n")
	for i := 0; i < 500; i++ {
		b.WriteString("  - *u\n")
	}
	return b.String()
}

func TestEveryErrorIsReported(t *testing.T) {
	// why: a user fixes a config in one pass only if every problem is listed.
	cfg := strings.Replace(base, "version: 1", "version: 3", 1) + "mode: yolo\nautoMerge: {method: ff}\n"
	_, err := Parse(Path, []byte(cfg))
	var e *Error
	if !errors.As(err, &e) || len(e.Errors) != 3 {
		t.Fatalf("want 3 errors, got %v", err)
	}
}

func TestDefaults(t *testing.T) {
	c, err := Parse(Path, []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		why  string
		got  any
		want any
	}{
		{"branches are backflow/<env>/<unit> unless configured", c.PullRequests.BranchPrefix, "backflow/"},
		{"receipts go to .backflow/receipts", c.Receipts.Dir, ".backflow/receipts"},
		{"squash keeps one commit per write-back", c.AutoMerge.Method, "squash"},
		{"auto-merge is opt-in", c.AutoMerge.Enabled, false},
		{"followUp waits 10 minutes for controllers to apply", c.FollowUp.GracePeriod.Duration, 10 * time.Minute},
		{"write-back is the point of the tool", c.Mode, "write-back"},
		{"a role accepts only audit-log attribution unless it says otherwise", c.Roles["sre"].Attribution, []observe.Attribution{observe.AttributionAuditLog}},
		{"cluster agreement is off by default", c.RequiresClusterAgreement("prod"), false},
		{"a repository is not paused by default", c.WritesBack(), true},
		{"tracking issues are opt-in", c.DriftReport.TrackingIssue, false},
		{"drafts are opt-in", c.PullRequests.Draft, false},
	}
	for _, tt := range tests {
		if !cmp.Equal(tt.got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.why, tt.got, tt.want)
		}
	}
}

func TestClusterAgreement(t *testing.T) {
	tests := []struct {
		why   string
		extra string
		env   string
		want  bool
	}{
		{"off by default", "", "prod", false},
		{"the top-level setting applies to every environment", "requireClusterAgreement: true\n", "dev", true},
		{"an environment may override the top level", "requireClusterAgreement: true\n", "prod", false},
		{"an unknown environment follows the top level", "requireClusterAgreement: true\n", "nope", true},
	}
	for _, tt := range tests {
		cfg := strings.Replace(base, "clusters: [c1, c2]", "clusters: [c1, c2]\n    requireClusterAgreement: false", 1) + tt.extra
		c, err := Parse(Path, []byte(cfg))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.RequiresClusterAgreement(tt.env); got != tt.want {
			t.Errorf("%s: got %v", tt.why, got)
		}
	}
}

func TestQueries(t *testing.T) {
	cfg := base + `    users: [bob]
    attribution: [asserted, audit-log]
  dba:
    users: [carol]
identities:
  alice: alice-gh
ignoreManagers: [hpa]
mode: observe-only
units2: x
`
	cfg = strings.Replace(cfg, "units2: x\n", "", 1)
	cfg = strings.Replace(cfg, "units:\n", "units:\n  - name: api\n    environment: dev\n    valuesFiles: [envs/dev/api.yaml]\n    objects: [\"apps/v1|Deployment|api|*\", \"v1|Service|api|*\"]\n", 1)
	c, err := Parse(Path, []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if env, ok := c.EnvironmentOf("c2"); !ok || env != "prod" {
		t.Errorf("why: every cluster of an environment maps to it: %q", env)
	}
	if _, ok := c.EnvironmentOf("elsewhere"); ok {
		t.Error("why: an unknown cluster has no environment")
	}
	if u, ok := c.UnitFor("prod", "apps/v1|StatefulSet|redis|redis-replicas"); !ok || u.Name != "redis" {
		t.Error("why: the object is claimed by redis in prod")
	}
	if _, ok := c.UnitFor("dev", "apps/v1|StatefulSet|redis|redis-replicas"); ok {
		t.Error("why: units are per environment")
	}
	if u, ok := c.UnitFor("dev", "v1|Service|api|api"); !ok || u.Name != "api" {
		t.Error("why: any of a unit's patterns claims")
	}
	if _, ok := c.UnitFor("prod", "apps/v1|StatefulSet|redis-2|x"); ok {
		t.Error("why: * never crosses |")
	}
	tests := []struct {
		why    string
		actor  string
		groups []string
		want   []string
	}{
		{"a group member holds the role", "alice", []string{"sre"}, []string{"sre"}},
		{"a listed user holds the role", "bob", nil, []string{"sre"}},
		{"roles come sorted", "carol", []string{"sre"}, []string{"dba", "sre"}},
		{"an unknown actor holds nothing", "mallory", []string{"devs"}, nil},
		{"no actor holds nothing, whatever groups are claimed", "", []string{"sre"}, nil},
	}
	for _, tt := range tests {
		if got := c.RolesFor(tt.actor, tt.groups); !cmp.Equal(got, tt.want) {
			t.Errorf("%s: %v", tt.why, got)
		}
	}
	sre, dba := c.Roles["sre"], c.Roles["dba"]
	if !sre.Accepts(observe.AttributionAsserted) || sre.Accepts(observe.AttributionManagedFields) {
		t.Error("why: attribution is a set of accepted levels, not a minimum")
	}
	if !dba.Accepts(observe.AttributionAuditLog) || dba.Accepts(observe.AttributionAsserted) {
		t.Error("why: the default accepts audit-log only")
	}
	if (Role{Attribution: []observe.Attribution{observe.AttributionUnknown}}).Accepts(observe.AttributionUnknown) {
		t.Error("why: an unknown identity is never accepted")
	}
	if l, ok := c.Login("alice"); !ok || l != "alice-gh" {
		t.Error("why: identities map actors to logins")
	}
	if !c.IgnoresManager("hpa") || c.IgnoresManager("kubectl") || c.IgnoresManager("") {
		t.Error("why: ignoreManagers is an exact list")
	}
	if c.WritesBack() {
		t.Error("why: observe-only writes nothing")
	}
	for _, p := range []string{".github/backflow.yaml", ".github/policy.yaml", ".backflow/receipts/x.yaml", ".github/workflows/x.yml", "../x", "CODEOWNERS"} {
		if c.Writable(p) == nil {
			t.Errorf("why: %s must never be written", p)
		}
	}
	if err := c.Writable("envs/prod/values.yaml"); err != nil {
		t.Errorf("why: a values file is writable: %v", err)
	}
}

func TestPausedWritesNothing(t *testing.T) {
	c, err := Parse(Path, []byte(base+"paused: true\n"))
	if err != nil || c.WritesBack() {
		t.Errorf("why: paused means do nothing: %v", err)
	}
}

func TestObjectGlobs(t *testing.T) {
	tests := []struct {
		pattern, key string
		want         bool
		why          string
	}{
		{"apps/v1|StatefulSet|redis|redis-replicas", "apps/v1|StatefulSet|redis|redis-replicas", true, "literal keys match themselves"},
		{"apps/v1|StatefulSet|redis|redis-*", "apps/v1|StatefulSet|redis|redis-master", true, "* matches a run within the segment"},
		{"*|*|redis|*", "v1|Service|redis|redis", true, "* per segment"},
		{"apps/v1|*|*", "apps/v1|StatefulSet|redis|x", false, "a pattern with the wrong segment count matches nothing"},
		{"apps/v1|*|redis", "apps/v1|StatefulSet|redis|x", false, "* never crosses |"},
		{"v1|Namespace||*", "v1|Namespace||redis", true, "cluster-scoped objects have an empty namespace"},
		{"v1|Namespace|*|redis", "v1|Namespace||redis", true, "* matches the empty namespace"},
	}
	for _, tt := range tests {
		if got := policy.MatchKey(tt.pattern, tt.key); got != tt.want {
			t.Errorf("%s: policy.MatchKey(%q, %q) = %v", tt.why, tt.pattern, tt.key, got)
		}
	}
	overlaps := []struct {
		a, b string
		want bool
		why  string
	}{
		{"a|b|c|d", "a|b|c|d", true, "the same key"},
		{"a|b|c|*", "a|b|c|d", true, "a glob and a key it matches"},
		{"a|b|c|x*", "a|b|c|*y", true, "xy matches both"},
		{"a|b|c|x*", "a|b|c|y*", false, "different fixed prefixes never meet"},
		{"a|*|c|d", "a|b|*|e", false, "one segment that cannot agree is enough"},
		{"*|*|*|*", "a|b|c|d", true, "match-all overlaps everything"},
		{"a|b|c|*-1", "a|b|c|*-2", false, "different fixed suffixes never meet"},
	}
	for _, tt := range overlaps {
		if got := objectsOverlap(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: objectsOverlap(%q, %q) = %v", tt.why, tt.a, tt.b, got)
		}
	}
}

// TestGlobsIntersectExhaustive checks the overlap decision against brute
// force: for all short globs over {a, b, *}, they intersect exactly when a
// string of length <= 6 over {a, b} matches both (long enough: two globs
// of length <= 3 that share a string share one of length <= 6).
func TestGlobsIntersectExhaustive(t *testing.T) {
	var globs []string
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		globs = append(globs, prefix)
		if n == 0 {
			return
		}
		for _, c := range []string{"a", "b", "*"} {
			gen(prefix+c, n-1)
		}
	}
	gen("", 3)
	var words []string
	var genw func(prefix string, n int)
	genw = func(prefix string, n int) {
		words = append(words, prefix)
		if n == 0 {
			return
		}
		genw(prefix+"a", n-1)
		genw(prefix+"b", n-1)
	}
	genw("", 6)
	for _, a := range globs {
		for _, b := range globs {
			brute := false
			for _, w := range words {
				if policy.Glob(a, w) && policy.Glob(b, w) {
					brute = true
					break
				}
			}
			if got := globsIntersect(a, b); got != brute {
				t.Fatalf("globsIntersect(%q, %q) = %v, brute force says %v", a, b, got, brute)
			}
		}
	}
}

func TestFieldPatterns(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
		why           string
	}{
		{"spec.replicas", "spec.replicas", true, "literal paths match themselves"},
		{"spec.*", "spec.replicas", true, "* is one segment"},
		{"spec.*", "spec.template.spec", false, "* is only one segment"},
		{"status.**", "status.conditions[0].type", true, "** is any number of segments"},
		{"status.**", "status", true, "** may be no segment at all"},
		{"**.image", "spec.template.spec.containers[0].image", true, "** can lead"},
		{"spec.template.spec.containers[*].image", "spec.template.spec.containers[3].image", true, "[*] is any list index"},
		{"spec.template.spec.containers[*].image", "spec.template.spec.containers.x.image", false, "[*] matches only list indexes"},
		{"spec.template.spec.containers.*.image", "spec.template.spec.containers[0].image", true, "* matches a list index segment too"},
		{"spec.template.spec.containers[1].image", "spec.template.spec.containers[0].image", false, "a fixed index is that index"},
		{"metadata.annotations.kubectl\\.kubernetes\\.io/*", "metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration", true, "escaped dots stay in the key; * inside a key"},
		{"metadata.annotations.kubectl\\.kubernetes\\.io/*", "metadata.annotations.kubectl.kubernetes.io/x", false, "unescaped dots in the path are separators"},
		{"metadata.labels.app*", "metadata.labels.app.kubernetes", false, "* within a key does not cross a ."},
		{"a.\\*", "a.b", false, "an escaped star is a star"},
	}
	for _, tt := range tests {
		p, err := CompileFieldPattern(tt.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tt.why, err)
		}
		if got := p.Match(tt.path); got != tt.want {
			t.Errorf("%s: %q ~ %q = %v", tt.why, tt.pattern, tt.path, got)
		}
	}
	for _, bad := range []string{"", "a..b", "a.", "a[x]", "a]", "a**b", "a\\", "a[0]b"} {
		if _, err := CompileFieldPattern(bad); err == nil {
			t.Errorf("why: %q is not a usable pattern, but compiled", bad)
		}
	}
}

func TestReadRepoFile(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "envs", "v.yaml"), "a: 1\n")
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	writeFile(t, outside, "password: x\n")
	if err := os.Symlink(outside, filepath.Join(root, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "envs"), filepath.Join(root, "dirlink")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		why  string
		rel  string
		want string // "" for success
	}{
		{"a regular file inside the repository", "envs/v.yaml", ""},
		{"a symlink could point anywhere", "link.yaml", "symlink"},
		{"a symlinked directory could too", "dirlink/v.yaml", "symlink"},
		{"paths may not climb out", "../x.yaml", "must stay inside"},
		{"a missing file says so", "envs/none.yaml", "file does not exist"},
		{"a directory is not a file", "envs", "not a regular file"},
		{"too large is refused", "envs/v.yaml:cap", "larger than"},
	}
	for _, tt := range tests {
		limit := int64(1024)
		rel := tt.rel
		if strings.HasSuffix(rel, ":cap") {
			rel, limit = strings.TrimSuffix(rel, ":cap"), 2
		}
		_, err := ReadRepoFile(root, rel, limit)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v", tt.why, err)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestIndexAgreesWithScan(t *testing.T) {
	cfg := strings.Replace(base, "units:\n", `units:
  - name: api
    environment: dev
    valuesFiles: [envs/dev/api.yaml]
    objects: ["apps/v1|Deployment|api|*", "v1|*|api-*|cm", "*|Secret|api|creds"]
  - name: web
    environment: prod
    valuesFiles: [envs/prod/web.yaml]
    objects: ["apps/v1|Deployment|web|web"]
`, 1) + "ignoreFields: [\"status.**\", \"spec.template.metadata.annotations.*\"]\n"
	indexed, err := Parse(Path, []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	scan := *indexed
	scan.index = nil // as a Config built by hand
	objects := []string{
		"apps/v1|Deployment|api|api", "v1|ConfigMap|api-1|cm", "v1|ConfigMap|api|cm", "v1|Secret|api|creds",
		"apps/v1|StatefulSet|redis|redis-replicas", "apps/v1|Deployment|web|web", "apps/v1|Deployment|web|x", "bad",
	}
	for _, env := range []string{"prod", "dev", "none"} {
		for _, o := range objects {
			u1, ok1 := indexed.UnitFor(env, o)
			u2, ok2 := scan.UnitFor(env, o)
			if ok1 != ok2 || (ok1 && u1.Name != u2.Name) {
				t.Errorf("why: the index is only a shortcut: UnitFor(%s, %s) indexed %v %v, scanned %v %v", env, o, u1, ok1, u2, ok2)
			}
		}
	}
	for _, cl := range []string{"c1", "c2", "d1", "x"} {
		e1, ok1 := indexed.EnvironmentOf(cl)
		e2, ok2 := scan.EnvironmentOf(cl)
		if e1 != e2 || ok1 != ok2 {
			t.Errorf("why: the index is only a shortcut: EnvironmentOf(%s)", cl)
		}
	}
	for _, f := range []string{"status.replicas", "spec.template.metadata.annotations.a", "spec.replicas", "spec..x"} {
		if indexed.IgnoresField(f) != scan.IgnoresField(f) {
			t.Errorf("why: the index is only a shortcut: IgnoresField(%s)", f)
		}
	}
}

func TestRootOf(t *testing.T) {
	root := &ValuesRoot{Document: "HelmRelease/redis", Path: "spec.values"}
	u := Unit{ValuesFiles: []string{"common.yaml", "release.yaml"}, ValuesRoot: root}
	if u.RootOf("release.yaml") != root {
		t.Error("the last values file is the manifest holding the inline values")
	}
	if u.RootOf("common.yaml") != nil {
		t.Error("the files before the manifest are plain values files, merged before the inline values")
	}
	if (&Unit{ValuesFiles: u.ValuesFiles}).RootOf("release.yaml") != nil {
		t.Error("without valuesRoot every file is a plain values file")
	}
	c := &Config{Units: []Unit{{ValuesFiles: []string{"common.yaml"}}, u}}
	if c.RootOf("release.yaml") != root || c.RootOf("common.yaml") != nil || c.RootOf("other.yaml") != nil {
		t.Error("the config reads a file as its units do")
	}
}

func TestReleaseOfChart(t *testing.T) {
	cases := []struct {
		name, why   string
		unit        Unit
		release, ns string
	}{
		{"defaults", "the release is the unit, the namespace the one its objects name",
			Unit{Name: "redis", Objects: []string{"apps/v1|StatefulSet|redis|*", "v1|Service|redis|redis-master"}, Chart: &Chart{Path: "c"}}, "redis", "redis"},
		{"given", "the chart's release name and namespace win",
			Unit{Name: "redis", Objects: []string{"apps/v1|StatefulSet|redis|*"}, Chart: &Chart{Path: "c", ReleaseName: "cache", Namespace: "data"}}, "cache", "data"},
		{"several namespaces", "objects in several namespaces name no release namespace",
			Unit{Name: "redis", Objects: []string{"apps/v1|StatefulSet|a|*", "apps/v1|StatefulSet|b|*"}}, "redis", ""},
		{"glob namespace", "a namespace glob names no release namespace",
			Unit{Name: "redis", Objects: []string{"apps/v1|StatefulSet|red*|*"}}, "redis", ""},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if r, ns := tt.unit.ReleaseName(), tt.unit.ReleaseNamespace(); r != tt.release || ns != tt.ns {
				t.Errorf("%s: got %q %q, want %q %q", tt.why, r, ns, tt.release, tt.ns)
			}
		})
	}
}
