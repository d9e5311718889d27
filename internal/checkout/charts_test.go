package checkout

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/render"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

func TestCheckCharts(t *testing.T) {
	cases := []struct {
		why, chartPath, valuePath string
		mismatches, others        int
		otherText                 string
	}{
		{why: "replica.replicaCount moves the replicas' spec.replicas and nothing else", chartPath: "charts/redis", valuePath: "replica.replicaCount"},
		{why: "master.count moves another object and not the entry's: a mismatch per unit, kept as a typed error",
			chartPath: "charts/redis", valuePath: "master.count", mismatches: 6},
		{why: "a chart folder that is missing is named by the unit's key", chartPath: "charts/missing", valuePath: "replica.replicaCount",
			others: 2, otherText: repoconfig.Path + ": units["},
	}
	for _, tc := range cases {
		repo := copyCheckout(t)
		if err := os.CopyFS(filepath.Join(repo, "charts", "redis"), os.DirFS(filepath.Join("..", "demo", "sample", "charts", "redis"))); err != nil {
			t.Fatal(err)
		}
		edit(t, filepath.Join(repo, repoconfig.Path), "chart: {name: bitnami/redis, version: 25.5.3}", "chart: {name: bitnami/redis, version: 23.1.1, path: "+tc.chartPath+"}")
		edit(t, filepath.Join(repo, ".github", "reverse-reconcile-policy.yaml"), "valuePath: replica.replicaCount", "valuePath: "+tc.valuePath)
		rep, err := Check(repo)
		if err != nil || !rep.OK() {
			t.Fatalf("%s: the fixture is not valid: %v %v", tc.why, err, rep.Problems)
		}
		var mismatches, others int
		for _, err := range CheckCharts(context.Background(), repo, rep, nil) {
			var pm *PolicyMismatchError
			if errors.As(err, &pm) {
				mismatches++
				if pm.Policy != rep.Config.Policy || !strings.HasPrefix(err.Error(), pm.Policy+": ") {
					t.Errorf("%s: %v does not name the policy", tc.why, err)
				}
				continue
			}
			others++
			if !strings.HasPrefix(err.Error(), tc.otherText) || errors.Unwrap(err) == nil {
				t.Errorf("%s: %v is not a wrapped error naming the unit", tc.why, err)
			}
		}
		if mismatches != tc.mismatches || others != tc.others {
			t.Errorf("%s: %d mismatch(es), %d other error(s)", tc.why, mismatches, others)
		}
	}
}

func edit(t *testing.T, path, old, repl string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("broken fixture: %q not in %s", old, path)
	}
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(data), old, repl)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadValuesFiles(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.yaml", "replicaCount: 1\n")
	b := writeFile(t, dir, "b.yaml", "image: {tag: v2}\n")
	bad := writeFile(t, dir, "bad.yaml", "a: [\n")
	big := writeFile(t, dir, "big.yaml", "a: "+strings.Repeat("x", repoconfig.MaxValuesSize)+"\n")
	missing := filepath.Join(dir, "missing.yaml")
	cases := []struct {
		why      string
		paths    []string
		trees    int
		readErr  bool
		parseErr bool
	}{
		{why: "files are read in the order given", paths: []string{a, b}, trees: 2},
		{why: "a missing file is a read error naming it", paths: []string{a, missing}, readErr: true},
		{why: "a file over the cap is refused before it is read", paths: []string{big}, readErr: true},
		{why: "a file that does not parse is not a read error, and names the file", paths: []string{bad}, parseErr: true},
	}
	for _, tc := range cases {
		trees, err := ReadValuesFiles(tc.paths)
		var re *ReadFileError
		switch {
		case tc.readErr:
			if !errors.As(err, &re) || re.Path != tc.paths[len(tc.paths)-1] || trees != nil {
				t.Errorf("%s: got %v", tc.why, err)
			}
		case tc.parseErr:
			if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), tc.paths[0]) {
				t.Errorf("%s: got %v", tc.why, err)
			}
		case err != nil || len(trees) != tc.trees:
			t.Errorf("%s: %d tree(s), %v", tc.why, len(trees), err)
		}
	}
	if trees, _ := ReadValuesFiles([]string{a, b}); trees[0]["replicaCount"] == nil || trees[1]["image"] == nil {
		t.Errorf("why: each tree is its own file's values; got %v", trees)
	}
}

func TestCheckChartsFetches(t *testing.T) {
	// why: config validate renders a unit whose chart is in a chart
	// repository as the bot would, so a repository that does not serve it
	// is a problem named by the unit's chart.repository key.
	server := httptest.NewServer(http.NotFoundHandler())
	defer server.Close()
	repo := copyCheckout(t)
	edit(t, filepath.Join(repo, repoconfig.Path), "chart: {name: bitnami/redis, version: 25.5.3}", "chart: {name: bitnami/redis, version: 23.1.1, repository: \""+server.URL+"/charts\"}")
	rep, err := Check(repo)
	if err != nil || !rep.OK() {
		t.Fatalf("the fixture is not valid: %v %v", err, rep.Problems)
	}
	problems := CheckCharts(context.Background(), repo, rep, render.NewFetcher(render.FetchOptions{CacheDir: t.TempDir()}))
	if len(problems) != 2 {
		t.Fatalf("problems %v, want one per unit", problems)
	}
	for _, p := range problems {
		if !errors.Is(p, render.ErrFetch) || !strings.Contains(p.Error(), "units[") || !strings.Contains(p.Error(), "].chart.repository: ") || !strings.Contains(p.Error(), "404") {
			t.Errorf("%v: want a fetch error naming the unit's chart.repository and the 404", p)
		}
	}
}
