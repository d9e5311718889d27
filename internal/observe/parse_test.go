package observe

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

var redisKey = ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}

func TestParseCubScoutSamples(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "cub-scout")
	tests := []struct {
		file string
		why  string
		opts Options
		want Result
	}{
		{
			file: "object-state-observed.yaml",
			why:  "the native document claims audit-log; a file is believed no higher than asserted by default, the observation itself no further",
			want: Result{Observations: []Observation{{
				Name: "redis-replicas-2026-06-18T12-00-00Z", Source: "cub-scout", Cluster: "prod-us-east-1",
				Environment: "prod-us-east", ObservedAt: ts("2026-06-18T12:00:00Z"), Object: redisKey, ResourceVersion: "48213",
				Change: Change{Actor: "alice", Groups: []string{"sre"}, Attribution: AttributionAsserted, Claimed: AttributionAuditLog,
					At: ts("2026-06-18T11:58:41Z"), Intent: "incident-fix: scale replicas to absorb a load spike"},
				Fields: []Field{{Path: "spec.replicas", Live: 4, Desired: 3, HasDesired: true, Manager: "kubectl"}},
				Origin: "S:3", Trust: AttributionAsserted,
			}}},
		},
		{
			file: "object-state-observed.yaml",
			why:  "a source trusted up to audit-log keeps the claimed level",
			opts: Options{Ceiling: AttributionAuditLog},
			want: Result{Observations: []Observation{{
				Name: "redis-replicas-2026-06-18T12-00-00Z", Source: "cub-scout", Cluster: "prod-us-east-1",
				Environment: "prod-us-east", ObservedAt: ts("2026-06-18T12:00:00Z"), Object: redisKey, ResourceVersion: "48213",
				Change: Change{Actor: "alice", Groups: []string{"sre"}, Attribution: AttributionAuditLog, Claimed: AttributionAuditLog,
					At: ts("2026-06-18T11:58:41Z"), Intent: "incident-fix: scale replicas to absorb a load spike"},
				Fields: []Field{{Path: "spec.replicas", Live: 4, Desired: 3, HasDesired: true, Manager: "kubectl"}},
				Origin: "S:3", Trust: AttributionAuditLog,
			}}},
		},
		{
			file: "trace-diff.redis-replicas.json",
			why:  "a trace-diff becomes one unattributed observation: values stay text for the typing table, dotted label keys are escaped and hold strings, a live \"-\" is ambiguous (absent or empty), managerHint is a hint and not the writer",
			opts: Options{Ceiling: AttributionAuditLog},
			want: Result{Observations: []Observation{{
				Source: "cub-scout", Cluster: "prod-us-east-1", ObservedAt: ts("2026-06-18T12:00:00.418263907Z"), Object: redisKey,
				ResourceVersion: "48213", UID: "0f3c2d1e-7a4b-4c9d-8e2f-5a6b7c8d9e0f",
				Evidence: Evidence{Comparison: "authored-fields-only", RenderKind: "local-rendered", RenderReference: "envs/prod-us-east/redis/rendered.yaml",
					RenderDigest: "4b1f0c2e9a7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a3928170f6e5d4c"},
				Change: Change{Attribution: AttributionUnknown, Claimed: AttributionUnknown},
				Fields: []Field{
					{Path: `metadata.labels.app\.kubernetes\.io/managed-by`, Live: "kubectl", Desired: "Helm", HasDesired: true, Textual: true, StringValued: true},
					{Path: "spec.replicas", Live: "4", Desired: "3", HasDesired: true, ManagerHint: "kubectl-scale", Cause: "manual-edit", Textual: true},
					{Path: "spec.template.spec.containers[0].resources.requests.cpu", Ambiguous: cubAmbiguousLive, Desired: "250m", HasDesired: true, Textual: true},
				},
				Origin: "S:1", Trust: AttributionAuditLog,
			}}},
		},
		{
			file: "watch.drift-events.jsonl",
			why:  "a DRIFT finding is a trigger of the scope's cluster (its scan.finding twin, the STATE finding and the discovery are not); resource.deleted forgets; ownership.changed to Native is a notice",
			want: Result{
				Triggers: []Trigger{{
					Object: ObjectKey{Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}, Cluster: "prod-us-east-1",
					At: ts("2026-06-18T12:00:30.771029411Z"), Message: "replicas: live 4 differs from git 3", Owner: "Flux", OwnerName: "redis", Origin: "S:1",
				}},
				Forgets: []Forget{{Object: ObjectKey{Kind: "Deployment", Namespace: "prod", Name: "api"}, Cluster: "prod-us-east-1", At: ts("2026-06-18T12:01:00.104772118Z"), Origin: "S:5"}},
				Notices: []Notice{{Object: ObjectKey{Kind: "StatefulSet", Namespace: "redis", Name: "redis-master"}, Cluster: "prod-us-east-1", At: ts("2026-06-18T12:01:00.104772118Z"),
					Message: "ownership changed from Flux to Native: no GitOps controller applies the object any more, so its live state will not be reconciled to desired", Origin: "S:6"}},
				Ignored: 3,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			tt.opts.Name = "S"
			got := ParseBytes(mustRead(t, filepath.Join(dir, tt.file)), tt.opts)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.why, diff)
			}
		})
	}
}

const goodDoc = `apiVersion: backflow.dev/v1alpha1
kind: ObjectStateObserved
spec:
  cluster: c1
  observedAt: "2026-06-18T12:00:00Z"
  object: "apps/v1|StatefulSet|redis|redis-replicas"
  fields:
    - field: spec.replicas
      live: 4
`

func TestNativeDocumentErrors(t *testing.T) {
	tests := []struct {
		why  string
		doc  string
		want string // substring of the error, with the line it names
	}{
		{"a misspelt key would drop evidence silently", strings.Replace(goodDoc, "cluster:", "clustr:", 1), "S:4: document 1: spec.clustr: unknown key"},
		{"unknown keys are refused at every level", goodDoc + "      color: red\n", "S:10: document 1: spec.fields[0].color: unknown key"},
		{"the document names its version", strings.Replace(goodDoc, "v1alpha1", "v9", 1), "S:1: document 1: apiVersion: want backflow.dev/v1alpha1"},
		{"the kind is checked", strings.Replace(goodDoc, "kind: ObjectStateObserved", "kind: Other", 1), "S:2: document 1: kind: want ObjectStateObserved"},
		{"a cluster is needed to find the environment", strings.Replace(goodDoc, "  cluster: c1\n", "", 1), "spec.cluster: required"},
		{"newest-wins needs a time", strings.Replace(goodDoc, "  observedAt: \"2026-06-18T12:00:00Z\"\n", "", 1), "spec.observedAt: required"},
		{"times are RFC 3339", strings.Replace(goodDoc, "2026-06-18T12:00:00Z", "yesterday", 1), "S:5: document 1: spec.observedAt: want an RFC 3339 time"},
		{"object keys have four segments", strings.Replace(goodDoc, "apps/v1|", "", 1), "spec.object: object key"},
		{"an object key names the object", strings.Replace(goodDoc, "|redis-replicas", "|", 1), "name is empty"},
		{"an absent fields list is not evidence of convergence", strings.Replace(goodDoc, "  fields:\n    - field: spec.replicas\n      live: 4\n", "", 1), "spec.fields: required"},
		{"a field needs a live value", strings.Replace(goodDoc, "      live: 4\n", "", 1), "S:8: document 1: spec.fields[0].live: required"},
		{"removed fields have no live value", goodDoc + "      removed: true\n", "spec.fields[0].live: not allowed with removed: true"},
		{"field paths must name a field", strings.Replace(goodDoc, "spec.replicas", "spec..replicas", 1), `field path "spec..replicas": offset 5: empty key`},
		{"a stray ] is not a key the planner could read back", strings.Replace(goodDoc, "spec.replicas", "spec.replicas]", 1), "] without ["},
		{"an index ends a segment, as the planner reads paths", strings.Replace(goodDoc, "spec.replicas", "spec.c[0]x", 1), "expected . or [ after ]"},
		{"an index follows a key, not a dot", strings.Replace(goodDoc, "spec.replicas", "spec.[0]", 1), "empty key before index"},
		{"list indexes are not empty", strings.Replace(goodDoc, "spec.replicas", "spec.c[]", 1), "empty list index"},
		{"list indexes are digits", strings.Replace(goodDoc, "spec.replicas", "spec.c[x]", 1), "list index must be digits"},
		{"a field listed twice is ambiguous", goodDoc + "    - field: spec.replicas\n      live: 5\n", "S:10: document 1: spec.fields[1].field: field spec.replicas is listed twice"},
		{"attribution levels are a closed set", strings.Replace(goodDoc, "  fields:", "  change: {actor: a, attribution: root}\n  fields:", 1), "spec.change.attribution: want unknown"},
		{"a claimed attribution needs an actor", strings.Replace(goodDoc, "  fields:", "  change: {attribution: audit-log}\n  fields:", 1), "spec.change.actor: required when attribution is audit-log"},
		{"sources are a closed set", strings.Replace(goodDoc, "  cluster: c1", "  source: rumour\n  cluster: c1", 1), "spec.source: want cub-scout, kubernetes or file"},
		{"aliases are refused, so an alias bomb cannot expand", strings.Replace(goodDoc, "live: 4", "live: &a [1]\n      desired: *a", 1), "aliases are not allowed"},
		{"duplicate keys are ambiguous", strings.Replace(goodDoc, "  cluster: c1", "  cluster: c1\n  cluster: c2", 1), "S:5: document 1: spec.cluster: duplicate key"},
		{"a syntax error names its line", "a: 1\nb: [\n", "S:2: document 1: yaml: line 2"},
		{"a document that is not a mapping is refused", "- 1\n", "want a mapping"},
		{"unrecognised documents are refused, not guessed", "hello: world\n", "not a recognised document"},
	}
	for _, tt := range tests {
		t.Run(tt.why, func(t *testing.T) {
			res := ParseBytes([]byte(tt.doc), Options{Name: "S"})
			if len(res.Errors) != 1 || len(res.Observations) != 0 {
				t.Fatalf("%s: want one error and nothing else, got %+v", tt.why, res)
			}
			if got := res.Errors[0].Error(); !strings.Contains(got, tt.want) {
				t.Errorf("%s:\n got %q\nwant it to contain %q", tt.why, got, tt.want)
			}
			var de *DocumentError
			if !errors.As(res.Errors[0], &de) {
				t.Errorf("%s: error %T is not a *DocumentError", tt.why, res.Errors[0])
			}
		})
	}
	if res := ParseBytes([]byte(goodDoc), Options{Name: "S"}); len(res.Errors) != 0 || len(res.Observations) != 1 {
		t.Fatalf("the base document must be valid: %+v", res)
	}
}

func TestDesiredGivenNullOrAbsent(t *testing.T) {
	tests := []struct {
		why        string
		extra      string
		hasDesired bool
		desired    any
	}{
		{"no desired key: the observer did not say", "", false, nil},
		{"desired: null says desired has no value", "      desired: null\n", true, nil},
		{"desired: ~ is YAML's null too", "      desired: ~\n", true, nil},
		{"a typed desired is kept typed", "      desired: 3\n", true, 3},
		{"a quoted desired is a string", "      desired: \"3\"\n", true, "3"},
	}
	for _, tt := range tests {
		res := ParseBytes([]byte(goodDoc+tt.extra), Options{Name: "S"})
		if len(res.Errors) != 0 {
			t.Fatalf("%s: %v", tt.why, res.Errors)
		}
		f := res.Observations[0].Fields[0]
		if f.HasDesired != tt.hasDesired || !cmp.Equal(f.Desired, tt.desired) {
			t.Errorf("%s: HasDesired %v Desired %#v", tt.why, f.HasDesired, f.Desired)
		}
	}
}

func TestEmptyFieldsIsEvidenceOfConvergence(t *testing.T) {
	doc := strings.Replace(goodDoc, "  fields:\n    - field: spec.replicas\n      live: 4\n", "  fields: []\n", 1)
	res := ParseBytes([]byte(doc), Options{Name: "S"})
	if len(res.Errors) != 0 || len(res.Observations) != 1 || res.Observations[0].Fields == nil || len(res.Observations[0].Fields) != 0 {
		t.Fatalf("fields: [] must give one observation with an empty, non-nil field list: %+v", res)
	}
}

func TestMalformedDocumentsAreSkipped(t *testing.T) {
	tests := []struct {
		why       string
		input     string
		wantObs   int
		wantLines []int
	}{
		{
			why:       "a bad YAML document between good ones is skipped, named by its first line",
			input:     goodDoc + "---\nkind: ObjectStateObserved\nbogus: 1\n---\n" + goodDoc,
			wantObs:   2,
			wantLines: []int{12},
		},
		{
			why:       "a YAML syntax error does not hide the next document",
			input:     goodDoc + "---\na: 1\nb: [c\n---\n" + goodDoc,
			wantObs:   2,
			wantLines: []int{11}, // yaml.v3 counts a parser error's line from 0
		},
		{
			why:       "a broken JSON line is skipped and the next line still read",
			input:     jsonDoc + "\n{\"broken\": \n" + jsonDoc + "\n",
			wantObs:   2,
			wantLines: []int{2},
		},
		{
			why:       "a top-level JSON array is a list of documents, each checked alone",
			input:     "[\n" + jsonDoc + ",\n{\"kind\": \"ObjectStateObserved\"},\n" + jsonDoc + "\n]",
			wantObs:   2,
			wantLines: []int{3},
		},
		{
			why:       "comments, markers and empty documents are not documents",
			input:     "# nothing\n---\n---\n" + goodDoc + "...\n",
			wantObs:   1,
			wantLines: nil,
		},
	}
	for _, tt := range tests {
		res := ParseBytes([]byte(tt.input), Options{Name: "S"})
		if len(res.Observations) != tt.wantObs {
			t.Errorf("%s: %d observations, want %d (errors %v)", tt.why, len(res.Observations), tt.wantObs, res.Errors)
		}
		var lines []int
		for _, err := range res.Errors {
			var de *DocumentError
			if !errors.As(err, &de) {
				t.Fatalf("%s: %T", tt.why, err)
			}
			lines = append(lines, de.Line)
		}
		if !cmp.Equal(lines, tt.wantLines) {
			t.Errorf("%s: error lines %v, want %v (%v)", tt.why, lines, tt.wantLines, res.Errors)
		}
	}
}

const jsonDoc = `{"apiVersion":"backflow.dev/v1alpha1","kind":"ObjectStateObserved","spec":{"cluster":"c1","observedAt":"2026-06-18T12:00:00Z","object":"v1|ConfigMap|ns|cm","fields":[{"field":"data.x","live":"4","desired":4.5}]}}`

func TestJSONValuesKeepTheirTypes(t *testing.T) {
	res := ParseBytes([]byte(jsonDoc), Options{Name: "S"})
	if len(res.Errors) != 0 {
		t.Fatal(res.Errors)
	}
	f := res.Observations[0].Fields[0]
	// why: a JSON string "4" is the string 4, not the number, and 4.5 a float.
	if f.Live != "4" || f.Desired != 4.5 || f.Textual {
		t.Errorf("got live %#v desired %#v textual %v", f.Live, f.Desired, f.Textual)
	}
}

func TestTraceDiffStatuses(t *testing.T) {
	base := `{"status": "STATUS", "comparison": "authored-fields-only", "context": "c1", "resource": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "n", "name": "cm"},
"read": {"available": true, "uid": "u1", "observedAt": "2026-06-18T12:00:00.5Z"}DIFFS}`
	diffs := `, "differences": [{"field": "data.x", "desired": "3", "live": "4"}]`
	tests := []struct {
		why     string
		status  string
		diffs   string
		fields  int // -1: an error
		wantErr string
	}{
		{"changed with differences: one field each", "changed", diffs, 1, ""},
		{"matched and no differences: positive evidence of convergence", "matched", "", 0, ""},
		{"changed without differences contradicts itself", "changed", "", -1, "changed, but no differences"},
		{"matched with differences contradicts itself", "matched", diffs, -1, "want changed"},
		{"a missing object is an error naming it, never an observation", "missing", "", -1, "missing: v1|ConfigMap|n|cm was not found live"},
		{"inconclusive is an error naming the omission, never noop", "inconclusive", `, "omissions": ["live object could not be read; comparison is inconclusive"]`, -1, "inconclusive: v1|ConfigMap|n|cm was not compared: live object could not be read"},
		{"a status cub-scout does not write is refused", "unchanged", "", -1, `"unchanged": want matched, changed, missing or inconclusive`},
	}
	for _, tt := range tests {
		doc := strings.Replace(strings.Replace(base, "STATUS", tt.status, 1), "DIFFS", tt.diffs, 1)
		res := ParseBytes([]byte(doc), Options{Name: "S"})
		if tt.fields < 0 {
			if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), tt.wantErr) {
				t.Errorf("%s: errors %v, want %q", tt.why, res.Errors, tt.wantErr)
			}
			continue
		}
		if len(res.Errors) != 0 || len(res.Observations) != 1 || len(res.Observations[0].Fields) != tt.fields {
			t.Errorf("%s: %+v", tt.why, res)
		}
	}
}

func TestTraceDiffDetails(t *testing.T) {
	tests := []struct {
		why   string
		doc   string
		check func(Result) bool
	}{
		{
			why: "a cluster-scoped object has an empty namespace segment",
			doc: `{"status":"changed","context":"c1","resource":{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","namespace":"","name":"view"},"read":{"observedAt":"2026-06-18T12:00:00Z"},"differences":[{"field":"rules[0].verbs[1]","desired":"get","live":"list"}]}`,
			check: func(r Result) bool {
				return len(r.Observations) == 1 && r.Observations[0].Object.String() == "rbac.authorization.k8s.io/v1|ClusterRole||view"
			},
		},
		{
			why: "the read's context and resource stand in for absent top-level ones",
			doc: `{"status":"changed","read":{"context":"c2","resource":{"apiVersion":"v1","kind":"ConfigMap","namespace":"n","name":"cm"},"observedAt":"2026-06-18T12:00:00Z"},"differences":[{"field":"data.a","desired":"1","live":"2"}]}`,
			check: func(r Result) bool {
				return len(r.Observations) == 1 && r.Observations[0].Cluster == "c2" && r.Observations[0].Object.Name == "cm"
			},
		},
		{
			why: "live \"-\" is ambiguous, neither removed nor a value; desired \"-\" is the placeholder, read as nothing, never the string \"-\"",
			doc: `{"status":"changed","context":"c1","resource":{"apiVersion":"v1","kind":"ConfigMap","name":"cm"},"read":{"observedAt":"2026-06-18T12:00:00Z"},"differences":[{"field":"data.a","desired":"1","live":"-"},{"field":"data.b","desired":"-","live":"2"}]}`,
			check: func(r Result) bool {
				if len(r.Observations) != 1 {
					return false
				}
				a, b := r.Observations[0].Fields[0], r.Observations[0].Fields[1]
				return !a.Removed && a.Ambiguous != "" && a.Live == nil && a.Desired == "1" &&
					!b.Removed && b.Ambiguous == "" && b.Live == "2" && b.HasDesired && b.DesiredPlaceholder() && b.DesiredLike("x") == nil
			},
		},
		{
			why: "an unread object is an error, not an observation",
			doc: `{"status":"matched","context":"c1","resource":{"apiVersion":"v1","kind":"ConfigMap","name":"cm"},"read":{"available":false,"observedAt":"2026-06-18T12:00:00Z"}}`,
			check: func(r Result) bool {
				return len(r.Observations) == 0 && len(r.Errors) == 1 && strings.Contains(r.Errors[0].Error(), "read.available")
			},
		},
		{
			why: "without a cluster the environment cannot be found",
			doc: `{"status":"matched","resource":{"apiVersion":"v1","kind":"ConfigMap","name":"cm"},"read":{"observedAt":"2026-06-18T12:00:00Z"}}`,
			check: func(r Result) bool {
				return len(r.Errors) == 1 && strings.Contains(r.Errors[0].Error(), "read.context: required")
			},
		},
		{
			why:   "keys backflow does not use are tolerated in another project's format",
			doc:   `{"status":"matched","context":"c1","newKey":{"x":1},"resource":{"apiVersion":"v1","kind":"ConfigMap","name":"cm"},"read":{"observedAt":"2026-06-18T12:00:00Z"}}`,
			check: func(r Result) bool { return len(r.Observations) == 1 && len(r.Errors) == 0 },
		},
		{
			why: "a comparison other than authored-fields-only is refused",
			doc: `{"status":"matched","comparison":"full-object","context":"c1","resource":{"apiVersion":"v1","kind":"ConfigMap","name":"cm"},"read":{"observedAt":"2026-06-18T12:00:00Z"}}`,
			check: func(r Result) bool {
				return len(r.Errors) == 1 && strings.Contains(r.Errors[0].Error(), "full-object: backflow reads only authored-fields-only comparisons")
			},
		},
		{
			why: "a Secret's inconclusive result says why, not read: required",
			doc: `{"status":"inconclusive","comparison":"authored-fields-only","coverage":"one-selected-object","source":{"kind":"local-rendered","reference":"r.yaml","objectCount":1},"context":"c1","resource":{"apiVersion":"v1","kind":"Secret","namespace":"n","name":"s"},"scopeDiscoveryReads":0,"summary":{"total":1,"changed":0,"added":0,"removed":0},"omissions":["Secret payload comparison omitted; Secret data and source-content digests are withheld"]}`,
			check: func(r Result) bool {
				return len(r.Errors) == 1 && strings.Contains(r.Errors[0].Error(), "Secret payload comparison omitted") && !strings.Contains(r.Errors[0].Error(), "read: required")
			},
		},
	}
	for _, tt := range tests {
		if res := ParseBytes([]byte(tt.doc), Options{Name: "S"}); !tt.check(res) {
			t.Errorf("%s: %+v", tt.why, res)
		}
	}
}

func TestWatchEvents(t *testing.T) {
	ev := func(typ, kind, name, msg, extra string) string {
		return `{"type":"` + typ + `","timestamp":"2026-06-18T12:00:30Z","resource":{"kind":"` + kind + `","name":"` + name + `","namespace":"ns"},"details":{"category":"DRIFT","message":"` + msg + `"}` + extra + "}\n"
	}
	tests := []struct {
		why      string
		input    string
		triggers int
		ignored  int
		errors   int
	}{
		{"one webhook body is one event", ev("drift.detected", "Deployment", "a", "m", ""), 1, 0, 0},
		{"a finding repeating a drift event is dropped", ev("drift.detected", "Deployment", "a", "m", "") + ev("scan.finding", "Deployment", "a", "m", ""), 1, 1, 0},
		{"a finding about another resource is its own trigger", ev("drift.detected", "Deployment", "a", "m", "") + ev("scan.finding", "Deployment", "b", "m", ""), 2, 0, 0},
		{"a finding that is not drift is not a trigger", strings.Replace(ev("scan.finding", "Deployment", "a", "m", ""), "DRIFT", "CVE", 1), 0, 1, 0},
		{"a STATE finding is readiness, not drift", strings.Replace(ev("drift.detected", "Deployment", "a", "m", ""), "DRIFT", "STATE", 1), 0, 1, 0},
		{"other event types are ignored", ev("ownership.changed", "Deployment", "a", "m", "") + ev("resource.discovered", "Deployment", "a", "m", ""), 0, 2, 0},
		{"a drift event without a resource name is an error", ev("drift.detected", "Deployment", "", "m", ""), 0, 0, 1},
		{"the same message from two clusters is two triggers", ev("drift.detected", "Deployment", "a", "m", `,"observation":{"scope":{"cluster":"c1"}}`) + ev("drift.detected", "Deployment", "a", "m", `,"observation":{"scope":{"cluster":"c2"}}`), 2, 0, 0},
	}
	for _, tt := range tests {
		res := ParseWatchEvents(strings.NewReader(tt.input), Options{Name: "webhook"})
		if len(res.Triggers) != tt.triggers || res.Ignored != tt.ignored || len(res.Errors) != tt.errors {
			t.Errorf("%s: %d triggers, %d ignored, errors %v", tt.why, len(res.Triggers), res.Ignored, res.Errors)
		}
	}
	// why: a pushed body that is not a watch event must not be read as evidence.
	res := ParseWatchEvents(strings.NewReader(goodDoc), Options{Name: "webhook"})
	if len(res.Observations) != 0 || len(res.Errors) != 1 {
		t.Errorf("ParseWatchEvents took a native document: %+v", res)
	}
}

func TestTrustCeiling(t *testing.T) {
	doc := func(level string) string {
		return strings.Replace(goodDoc, "  fields:", "  change: {actor: alice, attribution: "+level+"}\n  fields:", 1)
	}
	tests := []struct {
		why     string
		claimed string
		ceiling Attribution
		want    Attribution
	}{
		{"the default ceiling lowers audit-log to asserted", "audit-log", "", AttributionAsserted},
		{"a claim below the ceiling is kept", "asserted", AttributionAuditLog, AttributionAsserted},
		{"a trusted source keeps audit-log", "audit-log", AttributionAuditLog, AttributionAuditLog},
		{"managed-fields sits between", "audit-log", AttributionManagedFields, AttributionManagedFields},
		{"an unknown-ceiling source believes nobody", "audit-log", AttributionUnknown, AttributionUnknown},
		{"no claim is unknown", "unknown", AttributionAuditLog, AttributionUnknown},
	}
	for _, tt := range tests {
		res := ParseBytes([]byte(doc(tt.claimed)), Options{Name: "S", Ceiling: tt.ceiling})
		if len(res.Errors) != 0 {
			t.Fatalf("%s: %v", tt.why, res.Errors)
		}
		if got := res.Observations[0].Change; got.Attribution != tt.want || string(got.Claimed) != tt.claimed {
			t.Errorf("%s: attribution %s (claimed %s), want %s", tt.why, got.Attribution, got.Claimed, tt.want)
		}
	}
}

func TestAttributionCap(t *testing.T) {
	if AttributionAuditLog.Cap("bogus") != AttributionUnknown {
		t.Error("an invalid ceiling must believe nothing")
	}
	if Attribution("bogus").Cap(AttributionAuditLog) != AttributionUnknown {
		t.Error("an invalid level must count as unknown")
	}
	if _, err := ParseAttribution("root"); err == nil {
		t.Error("ParseAttribution accepted an unknown level")
	}
}

func TestSizeCap(t *testing.T) {
	// why: an input over its cap is refused whole, before parsing.
	res := Parse(strings.NewReader(goodDoc), Options{Name: "S", MaxBytes: 10})
	if len(res.Errors) != 1 || !errors.Is(res.Errors[0], ErrTooLarge) || len(res.Observations) != 0 {
		t.Errorf("got %+v", res)
	}
	// why: exactly at the cap is still read.
	res = Parse(strings.NewReader(goodDoc), Options{Name: "S", MaxBytes: int64(len(goodDoc))})
	if len(res.Errors) != 0 || len(res.Observations) != 1 {
		t.Errorf("got %+v", res)
	}
}

func TestDeepJSONIsRefused(t *testing.T) {
	deep := strings.Repeat("[", maxJSONDepth+5) + strings.Repeat("]", maxJSONDepth+5)
	res := ParseBytes([]byte(deep), Options{Name: "S"})
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "nested deeper") {
		t.Errorf("got %+v", res.Errors)
	}
}

func TestJSONSyntaxErrorNamesItsLine(t *testing.T) {
	tests := []struct {
		why   string
		input string
		want  string
	}{
		{"a bad literal deep in a JSON Lines stream is named by the line it is on, not its offset in the value", jsonDoc + "\n" + jsonDoc + "\n{\"kind\": nope}\n", "S:3: document 3: line 3: invalid character"},
		{"a missing comma in pretty-printed JSON is named by its line", jsonDoc + "\n{\n  \"kind\": \"x\"\n  \"spec\": {}\n}\n", "S:2: document 2: line 4: invalid character"},
		{"a bad literal at the start of the input is on line 1", "{\"kind\": nope}\n", "S:1: document 1: line 1: invalid character"},
	}
	for _, tt := range tests {
		res := ParseBytes([]byte(tt.input), Options{Name: "S"})
		if len(res.Errors) != 1 {
			t.Fatalf("%s: want one error, got %v", tt.why, res.Errors)
		}
		if got := res.Errors[0].Error(); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s:\n got %q\nwant it to start with %q", tt.why, got, tt.want)
		}
	}
}

func TestDateLikeValuesStayStrings(t *testing.T) {
	tests := []struct {
		why  string
		live string
		want any
	}{
		{"a date is the string Kubernetes holds and a values file reads, not a time", "2026-06-19", "2026-06-19"},
		{"a date-time keeps its own spelling, so it can equal the values file's", "2026-06-19 10:00:00", "2026-06-19 10:00:00"},
		{"inside a list too", "[2026-06-19]", []any{"2026-06-19"}},
		{"inside a map too", "{d: 2026-06-19}", map[string]any{"d": "2026-06-19"}},
		{"a number stays a number", "4", 4},
	}
	for _, tt := range tests {
		doc := strings.Replace(goodDoc, "live: 4", "live: "+tt.live, 1)
		res := ParseBytes([]byte(doc), Options{Name: "S"})
		if len(res.Errors) != 0 || len(res.Observations) != 1 {
			t.Fatalf("%s: %v", tt.why, res.Errors)
		}
		if got := res.Observations[0].Fields[0].Live; !cmp.Equal(got, tt.want) {
			t.Errorf("%s: live %#v, want %#v", tt.why, got, tt.want)
		}
	}
}
