package reliability

import (
	"maps"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/render/charttest"
)

// tgz packs files under the folder top, as helm package does.
func tgz(t testing.TB, top string, files map[string]string) string {
	b := map[string][]byte{}
	for n, data := range files {
		b[n] = []byte(data)
	}
	return string(charttest.Package(t, top, b))
}

// redisChart is a chart named name that renders the test repository's
// redis-replicas StatefulSet with replica.replicaCount replicas, plus
// extra files.
func redisChart(name string, extra map[string]string) map[string]string {
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: " + name + "\nversion: 1.0.0\n",
		"values.yaml": "replica:\n  replicaCount: 1\n",
		"templates/replicas.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: redis-replicas
  namespace: redis
spec:
  replicas: {{ .Values.replica.replicaCount }}
  serviceName: redis-headless
  selector:
    matchLabels: {app: redis}
  template:
    metadata:
      labels: {app: redis}
    spec:
      containers:
        - name: redis
          image: redis:7
`,
	}
	maps.Copy(files, extra)
	return files
}

// withUnitChart gives the prod-us-east unit the chart spec (a flow
// mapping), with the files of a chart in the repository under dir (none
// when chart is nil).
func withUnitChart(t testing.TB, files map[string]string, spec, dir string, chart map[string]string) {
	t.Helper()
	const was = "chart: {name: bitnami/redis, version: 25.5.3}"
	if !strings.Contains(files[configPath], was) {
		t.Fatalf("the repo config has no %q", was)
	}
	files[configPath] = strings.Replace(files[configPath], was, "chart: "+spec, 1)
	for n, data := range chart {
		files[dir+"/"+n] = data
	}
}

// renderDecision runs one cycle of a bot with renderer over a scale of
// redis-replicas to 4 in prod-us-east and returns the decision's outcome,
// its reasons with the plan's errors, and the pull requests it opened.
func renderDecision(e *hubEnv, renderer bot.RendererFunc) (outcome string, reasons string, prs int) {
	e.t.Helper()
	a := e.adapter(nil)
	src := &staticSource{}
	src.set(replicas(usEastNode, 4, e.clock.Now()))
	b, err := bot.New(bot.Options{Forge: a, Sources: []bot.Source{src}, Now: e.clock.Now, Logger: e.log, BotUserID: 4242,
		CommitMethod: forge.CommitGit, CommitKey: []byte("reliability commit key"), Renderer: renderer})
	if err != nil {
		e.t.Fatal(err)
	}
	rep := e.cycle(b)
	var all []string
	for _, rr := range rep.Repos {
		for _, d := range rr.Decisions {
			if d.Environment == "prod-us-east" {
				outcome = d.Outcome
				all = append(all, d.Reasons...)
			}
		}
		all = append(all, rr.PlanErrors...)
	}
	return outcome, strings.Join(all, "\n"), len(e.pulls(a, e.repo))
}
