package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// TestExpiryOfManifests: an expired acceptance of a manifest's field is
// restored only where its receipt says it was written, the object's
// document in writtenFile still holding the accepted value at
// writtenPath; otherwise the expiry is void and nothing is written.
func TestExpiryOfManifests(t *testing.T) {
	read, cfg := manifestsRestoredRepo(t)
	pol, err := policy.Parse(".github/reverse-reconcile-policy.yaml", read(".github/reverse-reconcile-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const rpath = ".backflow/receipts/prod/shop/shop_Deployment.apps.v1_web.yaml"
	web := string(read("deploy/prod/web.yaml"))
	for _, tc := range []struct {
		name  string
		files map[string]string
		state ExpiryState
		why   string
	}{
		// The document still holds the accepted 4: restored to 2.
		{"holds", map[string]string{"deploy/prod/web.yaml": web}, Due, "desired still holds the accepted values"},
		// A person set 3 since: their choice, not restored over.
		{"changed", map[string]string{"deploy/prod/web.yaml": strings.Replace(web, "replicas: 4   #", "replicas: 3   #", 1)},
			Void, "spec.replicas in deploy/prod/web.yaml is 3"},
		// The field was taken out of the document.
		{"absent", map[string]string{"deploy/prod/web.yaml": strings.Replace(web, "  replicas: 4   # two zones\n", "", 1)},
			Void, "spec.replicas in deploy/prod/web.yaml is no longer set"},
		// The Deployment moved to another file: the written file no
		// longer applies it.
		{"moved", map[string]string{"deploy/prod/web/deployment.yaml": web},
			Void, "deploy/prod/web.yaml, where the acceptance wrote spec.replicas, no longer holds the one document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string][]byte{}
			for p, d := range tc.files {
				files[p] = []byte(d)
			}
			snap := Snapshot{Config: cfg, Policy: pol, PolicyPath: ".github/reverse-reconcile-policy.yaml", Files: files,
				Receipts: map[string][]byte{rpath: read(rpath)}}
			res := Plan(nil, nil, snap, testNow)
			if len(res.Expiries) != 1 {
				t.Fatalf("expiries %+v, errors %q", res.Expiries, res.Errors)
			}
			x := res.Expiries[0]
			if x.State != tc.state || !strings.Contains(x.Why, tc.why) {
				t.Fatalf("expiry %s: %s; want %s: %s", x.State, x.Why, tc.state, tc.why)
			}
			if tc.state != Due {
				if len(res.WriteBacks) != 0 {
					t.Fatalf("a void expiry wrote %+v", res.WriteBacks)
				}
				return
			}
			if len(res.WriteBacks) != 1 || len(res.WriteBacks[0].Files) != 1 {
				t.Fatalf("write-backs %+v, errors %q", res.WriteBacks, res.Errors)
			}
			want := strings.Replace(web, "replicas: 4   #", "replicas: 2   #", 1)
			if got := string(res.WriteBacks[0].Files[0].Data); got != want {
				t.Fatalf("restored file:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestExpiryOfTwoDocumentsOfOneFile: two expired acceptances of objects
// whose documents share a manifest file are restored in one write-back,
// each document edited from the bytes the other's edit left, so neither
// restore is lost.
func TestExpiryOfTwoDocumentsOfOneFile(t *testing.T) {
	read, cfg := manifestsRestoredRepo(t)
	const policyPath = ".github/reverse-reconcile-policy.yaml"
	pol, err := policy.Parse(policyPath, []byte(strings.Replace(string(read(policyPath)), `          autoMerge: true
`, `          autoMerge: true
        - field: spec.ports[0].port
          objects: ["v1|Service|shop|web"]
          environments: [prod]
          acceptFor: 8h
          autoMerge: true
`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	const deployment = ".backflow/receipts/prod/shop/shop_Deployment.apps.v1_web.yaml"
	const service = ".backflow/receipts/prod/shop/shop_Service.v1_web.yaml"
	svc := strings.NewReplacer(
		"apps/v1|Deployment|shop|web", "v1|Service|shop|web",
		"deployment-web", "service-web",
		"field: spec.replicas", "field: spec.ports[0].port",
		"writtenPath: spec.replicas", "writtenPath: spec.ports[0].port",
		"by spec.rules[0].mayAccept[0]", "by spec.rules[0].mayAccept[1]",
		"setBy: spec.rules[0].mayAccept[0]", "setBy: spec.rules[0].mayAccept[1]",
		"liveValue: 4", "liveValue: 80",
		"desiredValueBefore: 2", "desiredValueBefore: 8080",
		"from: 2", "from: 8080",
		"to: 4", "to: 80",
		"desiredValueAfter: 4", "desiredValueAfter: 80",
	).Replace(string(read(deployment)))
	web := string(read("deploy/prod/web.yaml"))
	snap := Snapshot{Config: cfg, Policy: pol, PolicyPath: policyPath,
		Files:    map[string][]byte{"deploy/prod/web.yaml": []byte(web)},
		Receipts: map[string][]byte{deployment: read(deployment), service: []byte(svc)}}
	res := Plan(nil, nil, snap, testNow)
	for _, x := range res.Expiries {
		if x.State != Due {
			t.Fatalf("expiry of %s %s: %s; errors %q", x.Object, x.State, x.Why, res.Errors)
		}
	}
	if len(res.Expiries) != 2 || len(res.WriteBacks) != 1 || len(res.WriteBacks[0].Files) != 1 ||
		len(res.WriteBacks[0].Receipts) != 2 {
		t.Fatalf("expiries %d, write-backs %+v, errors %q", len(res.Expiries), res.WriteBacks, res.Errors)
	}
	want := strings.NewReplacer("replicas: 4   #", "replicas: 2   #", "port: 80", "port: 8080").Replace(web)
	if got := string(res.WriteBacks[0].Files[0].Data); got != want {
		t.Fatalf("restored file:\n%s\nwant:\n%s", got, want)
	}
}

// manifestsRestoredRepo is the break-glass-manifests-restored scenario's
// repository: a reader of its files and its parsed repo config.
func manifestsRestoredRepo(t *testing.T) (func(string) []byte, *repoconfig.Config) {
	t.Helper()
	dir := filepath.Join("testdata", "scenarios", "break-glass-manifests-restored", "repo")
	read := func(p string) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	cfg, err := repoconfig.Parse(repoconfig.Path, read(repoconfig.Path))
	if err != nil {
		t.Fatal(err)
	}
	return read, cfg
}

// TestExpiryReceiptObjectKeys: the default branch's receipts name their
// objects as text, read into keys once when the receipts are read; a
// receipt naming something that is no object key is an error of the plan
// and its expiry is not acted on.
func TestExpiryReceiptObjectKeys(t *testing.T) {
	read, cfg := manifestsRestoredRepo(t)
	pol, err := policy.Parse(".github/reverse-reconcile-policy.yaml", read(".github/reverse-reconcile-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const rpath = ".backflow/receipts/prod/shop/shop_Deployment.apps.v1_web.yaml"
	receipt := string(read(rpath))
	for _, tc := range []struct {
		why      string
		old, new string
		err      string // "" when the expiry is read
	}{
		{"the receipt's keys are read into the expiry and its changes", "", "", ""},
		{"an observation's object without its apiVersion is no key",
			"    object: apps/v1|Deployment|shop|web", "    object: Deployment|shop|web", "observation.object"},
		{"a changed field's object with an empty name is no key",
			"      - object: apps/v1|Deployment|shop|web", "      - object: apps/v1|Deployment|shop|",
			"bounds.changedFields[0].object"},
	} {
		data := strings.Replace(receipt, tc.old, tc.new, 1)
		if tc.old != "" && data == receipt {
			t.Fatalf("%s: %q is not in the receipt", tc.why, tc.old)
		}
		snap := Snapshot{Config: cfg, Policy: pol, PolicyPath: ".github/reverse-reconcile-policy.yaml",
			Files:    map[string][]byte{"deploy/prod/web.yaml": read("deploy/prod/web.yaml")},
			Receipts: map[string][]byte{rpath: []byte(data)}}
		res := Plan(nil, nil, snap, testNow)
		if tc.err != "" {
			want := "receipt " + rpath + ": " + tc.err
			if len(res.Expiries) != 0 || len(res.Errors) != 1 || !strings.HasPrefix(res.Errors[0], want) ||
				!strings.HasSuffix(res.Errors[0], "its expiry, if any, is not acted on") {
				t.Errorf("%s: expiries %+v, errors %q; want none and %q", tc.why, res.Expiries, res.Errors, want)
			}
			continue
		}
		web := observe.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
		if len(res.Expiries) != 1 || res.Expiries[0].Object != web || len(res.Expiries[0].Changes) != 1 ||
			res.Expiries[0].Changes[0].Object != web {
			t.Errorf("%s: expiries %+v, errors %q", tc.why, res.Expiries, res.Errors)
		}
	}
}
