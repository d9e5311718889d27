package bot

import (
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
)

// releaseEast is a Flux manifest of three documents whose HelmRelease
// carries prod-us-east's replica count inline, layered over the unit's
// values file.
const (
	releaseEast     = "clusters/prod-us-east/redis.yaml"
	releaseEastData = `# redis for prod-us-east, applied by Flux.
apiVersion: v1
kind: Namespace
metadata:
  name: redis
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: bitnami
  namespace: redis
spec:
  interval: 1h
  url: https://charts.bitnami.com/bitnami
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: redis
  namespace: redis
spec:
  interval: 10m
  chart:
    spec:
      chart: redis
      version: "25.5.3"
      sourceRef: {kind: HelmRepository, name: bitnami}
  values:
    replica:
      replicaCount: 3   # scaled live during incidents
    auth: {enabled: true}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: redis-notes
data:
  owner: platform-sre
`
)

// A HelmRelease's inline replicaCount, read after the unit's values file,
// written back through the real adapter and the local hub: the pull request
// passes its own whole-diff check and merges, and on main only the bytes of
// that one value changed in the manifest; the values file before it, the
// other documents and the comments are as they were.
func TestHubHelmReleaseInlineValues(t *testing.T) {
	e := newHubEnv(t, forge.CommitGit, func(files map[string]string) {
		files[valuesEast] = strings.Replace(files[valuesEast], "  replicaCount: 3 # absorbs read load; scaled live during incidents\n", "", 1)
		files[releaseEast] = releaseEastData
		files[".github/backflow.yaml"] = strings.Replace(files[".github/backflow.yaml"],
			"    valuesFiles: [envs/prod-us-east/redis/values.yaml]\n",
			"    valuesFiles: [envs/prod-us-east/redis/values.yaml, "+releaseEast+"]\n    valuesRoot: {document: HelmRelease/redis, path: spec.values}\n", 1)
	})
	valuesBefore := e.file("main", valuesEast)
	e.src.Result.Observations = append(e.src.Result.Observations, replicas(4, 0))
	rep, _, _ := e.cycle()
	prs := e.pulls()
	if len(prs) != 1 || !prs[0].Merged {
		t.Fatalf("want one merged pull request, got %+v\n%s", prs, rep.Text())
	}
	want := strings.Replace(releaseEastData, "replicaCount: 3   #", "replicaCount: 4   #", 1)
	if got := e.file("main", releaseEast); got != want {
		t.Errorf("the manifest on main is not the original with one value changed:\n%s\ndiff: %q", got, diffLines(releaseEastData, got))
	}
	if got := e.file("main", valuesEast); got != valuesBefore {
		t.Errorf("the values file before the manifest changed:\n%s", got)
	}
	m, ok := ParseMarker(prs[0].Body)
	if !ok || len(m.Receipts) != 1 {
		t.Fatalf("marker: %+v", m)
	}
	r := e.file("main", m.Receipts[0])
	if !strings.Contains(r, "valuesFile: "+releaseEast) || !strings.Contains(r, "valuePath: replica.replicaCount") {
		t.Errorf("the receipt does not name the manifest and the path below its root:\n%s", r)
	}
	verifyWithPolicy(t, []byte(e.file("main", ".github/reverse-reconcile-policy.yaml")), []byte(r))
	if _, idle, routes := e.cycle(); idle.Writes != 0 {
		t.Errorf("the cycle after the merge wrote %d times: %v", idle.Writes, routes)
	}
}
