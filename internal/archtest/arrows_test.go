package archtest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the project's module path.
const module = "github.com/backflow-dev/backflow"

// core names the packages that decide: pure functions of their inputs.
var core = []string{
	"internal/yamlnode",
	"internal/helmvalues",
	"internal/values",
	"internal/policy",
	"internal/receipt",
	"internal/repoconfig",
	"internal/observe",
	"internal/plan",
	"internal/lifecycle",
	"internal/witness",
	"internal/diffbound",
	"internal/hold",
	"internal/fluxdoc",
}

// clients are the libraries that reach a cluster, GitHub, git or the
// network.
var clients = []string{
	"k8s.io/client-go",
	"github.com/google/go-github",
	"github.com/go-git/go-git",
	"github.com/bradleyfalzon/ghinstallation",
	"net/http",
}

// light are the libraries a one-edit process must not link: their package
// initialisation (Helm's JSON schema compiler, client-go's scheme, the
// registries' clients, the metrics) runs before main in every process that
// links them.
var light = []string{
	"helm.sh",
	"k8s.io/client-go",
	"k8s.io/api",
	"k8s.io/apimachinery",
	"oras.land",
	"github.com/prometheus",
	"github.com/google/go-github",
	"github.com/go-git/go-git",
	"github.com/bradleyfalzon/ghinstallation",
	"github.com/santhosh-tekuri/jsonschema",
}

// rule forbids the packages named by pkgs (a pattern: "x" is x itself,
// "x/..." is x and everything below it), except those exempt names, to
// depend, directly or through others, on anything that forbidden matches,
// except what allowed matches.
type rule struct {
	why       string
	pkgs      []string
	exempt    []string
	forbidden []string
	allowed   []string
	// excused are forbidden packages a rule lets in only when every chain
	// of imports that reaches them goes through a named library.
	excused []excuse
}

// excuse lets dep (a pattern) in when it is reached only through via.
type excuse struct {
	dep, via, why string
}

// kyamlHTTP: the values editor locates with kyaml, whose yaml package links
// kube-openapi's spec types and, through go-openapi's loader, net/http. The
// editor calls no loader and does no I/O; a chain to net/http that does not
// go through kyaml still breaks the rule.
var kyamlHTTP = excuse{dep: "net/http/...", via: "sigs.k8s.io/kustomize/kyaml/...", why: "kyaml's openapi types link a spec loader the editor never calls"}

func project(paths ...string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = module + "/" + p
	}
	return out
}

// rules are the arrows of the package map.
var rules = []rule{
	{
		why:       "the core decides without clients: no Kubernetes client, GitHub, git or HTTP",
		pkgs:      project(core...),
		forbidden: withSubpackages(clients),
		excused:   []excuse{kyamlHTTP},
	},
	{
		why:       "the core imports only the core and the forge port",
		pkgs:      project(core...),
		forbidden: project("..."),
		allowed:   append(project(core...), module+"/internal/forge"),
	},
	{
		why:       "the core compares renderings but does not render: no Helm SDK",
		pkgs:      project(core...),
		forbidden: withSubpackages([]string{"helm.sh/helm"}),
	},
	{
		why:       "the leaf path and document package imports nothing of the project",
		pkgs:      project("internal/yamlnode"),
		forbidden: project("..."),
		allowed:   project("internal/yamlnode"),
	},
	{
		why:       "the leaf of Helm's values semantics imports nothing of the project and not Helm: its tests hold it to the SDK",
		pkgs:      project("internal/helmvalues"),
		forbidden: append(withSubpackages([]string{"helm.sh"}), project("...")...),
		allowed:   project("internal/helmvalues"),
	},
	{
		why:       "the bot applies effects through the forge port, never a concrete adapter",
		pkgs:      project("internal/bot/..."),
		forbidden: project("internal/forge/github/...", "internal/localhub/...", "internal/confighub/confighubtest/..."),
	},
	{
		why:       "the bot plans with the render witness it is given and acts through the port: no Helm SDK, Kubernetes client, GitHub, git or HTTP, which internal/app wires",
		pkgs:      project("internal/bot/..."),
		forbidden: append(withSubpackages(append([]string{"helm.sh"}, clients...)), project("internal/render/...")...),
		excused:   []excuse{kyamlHTTP},
	},
	{
		why:       "the bot reads observations through the model; the sources that fetch them are wired in internal/app",
		pkgs:      project("internal/bot/..."),
		forbidden: project("internal/observe/source/..."),
	},
	{
		why:       "only the wiring (internal/app, the command line, the demo) knows the GitHub adapter",
		pkgs:      project("..."),
		exempt:    project("internal/app/...", "cmd/...", "internal/cli/...", "internal/demo/...", "internal/reliability/...", "internal/forge/github/..."),
		forbidden: project("internal/forge/github/..."),
	},
	{
		why:       "the local hub simulates GitHub without knowing the product",
		pkgs:      project("internal/localhub/..."),
		forbidden: project("..."),
		allowed:   project("internal/localhub/...", "internal/yamlnode"),
	},
	{
		why:       "the ConfigHub stand-in simulates ConfigHub without knowing the product, its client included",
		pkgs:      project("internal/confighub/confighubtest/..."),
		forbidden: project("..."),
		allowed:   project("internal/confighub/confighubtest/...", "internal/yamlnode"),
	},
	{
		why:       "the ConfigHub client speaks ConfigHub's API in its own types: it knows no decision, GitHub, git or cluster",
		pkgs:      project("internal/confighub"),
		forbidden: append(withSubpackages([]string{"github.com/google/go-github", "github.com/go-git/go-git", "github.com/bradleyfalzon/ghinstallation", "k8s.io/client-go"}), project("...")...),
		allowed:   project("internal/confighub", "internal/yamlnode"),
	},
	{
		why:       "the ConfigHub store writes Units through the ConfigHub client: no GitHub, git, cluster client, adapter or stand-in",
		pkgs:      project("internal/hubstore"),
		forbidden: append(withSubpackages([]string{"github.com/google/go-github", "github.com/go-git/go-git", "github.com/bradleyfalzon/ghinstallation", "k8s.io/client-go"}), project("internal/forge/...", "internal/localhub/...", "internal/confighub/confighubtest/...", "internal/bot/...", "internal/lifecycle/...", "internal/app/...")...),
	},
	{
		why:       "the observation sources fetch from clusters and files, never GitHub or git",
		pkgs:      project("internal/observe/source/..."),
		forbidden: append(withSubpackages([]string{"github.com/google/go-github", "github.com/go-git/go-git", "github.com/bradleyfalzon/ghinstallation"}), project("internal/forge/...", "internal/localhub/...")...),
	},
	{
		why:       "the forge port speaks backflow's own types, not an adapter's",
		pkgs:      project("internal/forge"),
		forbidden: withSubpackages(clients),
	},
	{
		why:       "the GitHub adapter knows the port, not the domain",
		pkgs:      project("internal/forge/github/..."),
		forbidden: project("internal/plan/...", "internal/policy/...", "internal/receipt/...", "internal/repoconfig/...", "internal/values/...", "internal/observe/...", "internal/lifecycle/...", "internal/bot/...", "internal/localhub/..."),
	},
	{
		why:       "the values commands, the root both binaries share and the front (backflow) link the editor alone: Go runs every linked package's init before main, and Helm's, client-go's, the registries' and the metrics' cost a one-edit process more than the edit",
		pkgs:      project("internal/valuescmd", "internal/cliroot", "cmd/backflow"),
		forbidden: append(withSubpackages(light), project("...")...),
		allowed:   project("internal/valuescmd", "internal/cliroot", "internal/values", "internal/yamlnode", "cmd/backflow"),
	},
	{
		why:       "kustomize builds from the files it is given: no Kubernetes client, GitHub or git, and neither the planner nor an adapter",
		pkgs:      project("internal/kustomize"),
		forbidden: append(withSubpackages([]string{"k8s.io/client-go", "github.com/google/go-github", "github.com/go-git/go-git", "github.com/bradleyfalzon/ghinstallation"}), project("internal/plan/...", "internal/bot/...", "internal/forge/...", "internal/localhub/...", "internal/app/...", "internal/render/...")...),
	},
	{
		why:       "the bot config describes what to build and builds nothing: no adapter, source, renderer, bot or client of GitHub, git or a cluster, which internal/app wires from it",
		pkgs:      project("internal/botconfig"),
		forbidden: append(withSubpackages([]string{"github.com/google/go-github", "github.com/go-git/go-git", "github.com/bradleyfalzon/ghinstallation", "k8s.io/client-go", "helm.sh/helm"}), project("internal/forge/github/...", "internal/localhub/...", "internal/observe/source/...", "internal/render/...", "internal/bot/...", "internal/lifecycle/...", "internal/plan/...", "internal/checkout/...", "internal/app/...")...),
	},
	{
		why:       "the checkout readers read a checkout or a commit and hand it over: no GitHub, no bot config, and nothing that decides about pull requests",
		pkgs:      project("internal/checkout"),
		forbidden: append(withSubpackages([]string{"github.com/google/go-github", "github.com/bradleyfalzon/ghinstallation"}), project("internal/forge/...", "internal/localhub/...", "internal/bot/...", "internal/lifecycle/...", "internal/server/...", "internal/botconfig/...", "internal/app/...")...),
	},
	{
		why:       "the wiring is the top: only the commands, the demo and the tests that run the whole bot build on it",
		pkgs:      project("..."),
		exempt:    project("internal/app/...", "cmd/...", "internal/cli/...", "internal/demo/...", "internal/reliability/...", "deploy/..."),
		forbidden: project("internal/app/..."),
	},
	{
		why:       "the server serves endpoints and leaves decisions to the domain",
		pkgs:      project("internal/server/..."),
		forbidden: project("internal/plan/...", "internal/policy/...", "internal/receipt/...", "internal/repoconfig/...", "internal/values/...", "internal/lifecycle/...", "internal/bot/...", "internal/forge/github/..."),
	},
}

func withSubpackages(roots []string) []string {
	out := make([]string, 0, 2*len(roots))
	for _, r := range roots {
		out = append(out, r, r+"/...")
	}
	return out
}

// match reports whether path matches pattern ("x" or "x/...").
func match(pattern, path string) bool {
	if root, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == root || strings.HasPrefix(path, root+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, path) })
}

// graph is what go list says of each package: its direct imports and
// everything it depends on, directly or not.
type graph struct {
	imports map[string][]string
	deps    map[string][]string
}

// violations checks g against rules and names each broken arrow once, by
// the shortest chain of imports that breaks it. A forbidden package reached
// only through another forbidden one, or through a package the same rule
// holds, is not named again.
func violations(g graph, rules []rule) []string {
	var out []string
	pkgs := make([]string, 0, len(g.deps))
	for p := range g.deps {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, r := range rules {
		for _, p := range pkgs {
			if !matchAny(r.pkgs, p) || matchAny(r.exempt, p) {
				continue
			}
			var bad []string
			for _, d := range g.deps[p] {
				if matchAny(r.forbidden, d) && !matchAny(r.allowed, d) && !g.excused(r, p, d) {
					bad = append(bad, d)
				}
			}
			for _, d := range bad {
				if slices.ContainsFunc(bad, func(e string) bool { return e != d && slices.Contains(g.deps[e], d) }) {
					continue
				}
				// A package the rule also holds, imported by p, names it.
				if slices.ContainsFunc(g.imports[p], func(q string) bool {
					return matchAny(r.pkgs, q) && !matchAny(r.exempt, q) && (q == d || slices.Contains(g.deps[q], d))
				}) {
					continue
				}
				out = append(out, fmt.Sprintf("%s: %s", strings.Join(g.chain(p, d), " -> "), r.why))
			}
		}
	}
	return out
}

// excused says every chain of imports from p to d goes through the library
// an excuse of r names for d.
func (g graph) excused(r rule, p, d string) bool {
	for _, e := range r.excused {
		if !match(e.dep, d) {
			continue
		}
		seen := map[string]bool{p: true}
		queue := []string{p}
		reached := false
		for len(queue) > 0 && !reached {
			cur := queue[0]
			queue = queue[1:]
			for _, n := range g.imports[cur] {
				if seen[n] || match(e.via, n) {
					continue
				}
				seen[n] = true
				reached = reached || n == d
				queue = append(queue, n)
			}
		}
		if !reached {
			return true
		}
	}
	return false
}

// chain is the shortest chain of imports from p to d, module paths
// shortened.
func (g graph) chain(p, d string) []string {
	prev := map[string]string{p: ""}
	queue := []string{p}
	for len(queue) > 0 && prev[d] == "" && p != d {
		cur := queue[0]
		queue = queue[1:]
		for _, n := range g.imports[cur] {
			if _, seen := prev[n]; !seen {
				prev[n] = cur
				queue = append(queue, n)
			}
		}
	}
	if _, ok := prev[d]; !ok {
		return []string{short(p), "...", short(d)}
	}
	var out []string
	for n := d; n != ""; n = prev[n] {
		out = append(out, short(n))
	}
	slices.Reverse(out)
	return out
}

func short(p string) string { return strings.TrimPrefix(p, module+"/") }

// TestArrows lists every package of the module with all it depends on (the
// test files excluded: a test may use what its package must not) and
// checks the rules.
func TestArrows(t *testing.T) {
	touchSources(t)
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .Deps " "}}`, module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := graph{imports: map[string][]string{}, deps: map[string][]string{}}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 3 {
			continue
		}
		g.imports[f[0]] = strings.Fields(f[1])
		g.deps[f[0]] = strings.Fields(f[2])
	}
	for _, p := range project("internal/plan", "internal/policy", "internal/observe", "internal/yamlnode", "internal/bot", "internal/localhub") {
		if _, ok := g.deps[p]; !ok {
			t.Fatalf("go list did not list %s: the rules would hold nothing", p)
		}
	}
	for _, v := range violations(g, rules) {
		t.Error(v)
	}
}

// touchSources stats every Go file and go.mod of the module. go test
// caches a result by the files the test itself opened or stat'd; the
// sources that go list reads in another process would otherwise not count,
// and a cached pass could hide a new import.
func touchSources(t *testing.T) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".go") || d.Name() == "go.mod") {
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRulesCatchEachArrow feeds the rules a module that breaks each arrow
// once, so that a rule that could never fail is caught too.
func TestRulesCatchEachArrow(t *testing.T) {
	p := func(s string) string { return module + "/" + s }
	tests := []struct {
		why  string
		pkg  string
		dep  string
		want bool
	}{
		{"the planner linking client-go", p("internal/plan"), "k8s.io/client-go/rest", true},
		{"the policy linking net/http", p("internal/policy"), "net/http", true},
		{"the receipt linking an HTTP test server", p("internal/receipt"), "net/http/httptest", true},
		{"the values editor linking go-github", p("internal/values"), "github.com/google/go-github/v62/github", true},
		{"the repo config linking go-git", p("internal/repoconfig"), "github.com/go-git/go-git/v5", true},
		{"the observation model linking ghinstallation", p("internal/observe"), "github.com/bradleyfalzon/ghinstallation/v2", true},
		{"the lifecycle linking GitHub", p("internal/lifecycle"), "github.com/google/go-github/v62/github", true},
		{"the observation model importing its I/O sources", p("internal/observe"), p("internal/observe/source"), true},
		{"the planner importing the bot", p("internal/plan"), p("internal/bot"), true},
		{"the leaf importing the values editor", p("internal/yamlnode"), p("internal/values"), true},
		{"the bot importing the GitHub adapter", p("internal/bot"), p("internal/forge/github"), true},
		{"the bot importing the local hub", p("internal/bot"), p("internal/localhub"), true},
		{"the local hub importing a product package", p("internal/localhub"), p("internal/receipt"), true},
		{"an observation source importing go-git", p("internal/observe/source"), "github.com/go-git/go-git/v5/plumbing", true},
		{"the forge port exposing go-github", p("internal/forge"), "github.com/google/go-github/v62/github", true},
		{"the GitHub adapter importing the planner", p("internal/forge/github"), p("internal/plan"), true},
		{"the server importing the bot", p("internal/server"), p("internal/bot"), true},
		{"the bot importing an observation source", p("internal/bot"), p("internal/observe/source"), true},
		{"the bot linking the Helm SDK", p("internal/bot"), "helm.sh/helm/v3/pkg/engine", true},
		{"the bot linking client-go", p("internal/bot"), "k8s.io/client-go/rest", true},
		{"the bot importing the renderer", p("internal/bot"), p("internal/render"), true},
		{"the bot linking net/http", p("internal/bot"), "net/http", true},
		{"the bot using the witness", p("internal/bot"), p("internal/witness"), false},
		{"kustomize linking go-git", p("internal/kustomize"), "github.com/go-git/go-git/v5", true},
		{"kustomize importing the planner", p("internal/kustomize"), p("internal/plan"), true},
		{"kustomize using the witness", p("internal/kustomize"), p("internal/witness"), false},
		{"the lifecycle reaching the GitHub adapter", p("internal/lifecycle"), p("internal/forge/github"), true},
		{"the server reaching the GitHub adapter", p("internal/server"), p("internal/forge/github"), true},
		{"the wiring knowing the GitHub adapter", p("internal/app"), p("internal/forge/github"), false},
		{"the demo knowing the GitHub adapter", p("internal/demo"), p("internal/forge/github"), false},
		{"the planner using the core", p("internal/plan"), p("internal/receipt"), false},
		{"the lifecycle using the forge port", p("internal/lifecycle"), p("internal/forge"), false},
		{"the bot using the port", p("internal/bot"), p("internal/forge"), false},
		{"the GitHub adapter linking go-github", p("internal/forge/github"), "github.com/google/go-github/v62/github", false},
		{"an observation source linking client-go", p("internal/observe/source"), "k8s.io/client-go/dynamic", false},
		{"the core using net/url, which is not a client", p("internal/plan"), "net/url", false},
		{"the shared root linking the Helm SDK", p("internal/cliroot"), "helm.sh/helm/v4/pkg/engine", true},
		{"the shared root linking the JSON schema compiler", p("internal/cliroot"), "github.com/santhosh-tekuri/jsonschema/v6", true},
		{"the shared root linking an OCI registry client", p("internal/cliroot"), "oras.land/oras-go/v2/registry/remote", true},
		{"the shared root importing the whole command line", p("internal/cliroot"), p("internal/cli"), true},
		{"the values commands linking Kubernetes' API types", p("internal/valuescmd"), "k8s.io/api/core/v1", true},
		{"the values commands using the shared root's exit codes", p("internal/valuescmd"), p("internal/cliroot"), false},
		{"the front importing the whole command line", p("cmd/backflow"), p("internal/cli"), true},
		{"the front linking client-go", p("cmd/backflow"), "k8s.io/client-go/kubernetes/scheme", true},
		{"the front linking the metrics", p("cmd/backflow"), "github.com/prometheus/client_golang/prometheus", true},
		{"the front using the shared root", p("cmd/backflow"), p("internal/cliroot"), false},
		{"the core importing the whole command line", p("cmd/backflow-core"), p("internal/cli"), false},
		{"Helm's values semantics importing the planner", p("internal/helmvalues"), p("internal/plan"), true},
		{"Helm's values semantics linking the Helm SDK", p("internal/helmvalues"), "helm.sh/helm/v4/pkg/chart/common/util", true},
		{"the renderer using Helm's values semantics", p("internal/render"), p("internal/helmvalues"), false},
		{"the bot config building an observation source", p("internal/botconfig"), p("internal/observe/source"), true},
		{"the bot config linking client-go", p("internal/botconfig"), "k8s.io/client-go/rest", true},
		{"the bot config importing the bot", p("internal/botconfig"), p("internal/bot"), true},
		{"the bot config naming the server's config types", p("internal/botconfig"), p("internal/server"), false},
		{"the checkout readers importing the bot", p("internal/checkout"), p("internal/bot"), true},
		{"the checkout readers importing the lifecycle", p("internal/checkout"), p("internal/lifecycle"), true},
		{"the checkout readers linking go-github", p("internal/checkout"), "github.com/google/go-github/v62/github", true},
		{"the checkout readers reading the bot config", p("internal/checkout"), p("internal/botconfig"), true},
		{"the checkout readers reading git", p("internal/checkout"), "github.com/go-git/go-git/v5", false},
		{"the checkout readers planning a checkout", p("internal/checkout"), p("internal/plan"), false},
		{"the planner importing the wiring", p("internal/plan"), p("internal/app"), true},
		{"the server importing the wiring", p("internal/server"), p("internal/app"), true},
		{"the command line using the wiring", p("internal/cli"), p("internal/app"), false},
	}
	for _, tt := range tests {
		direct := map[string][]string{tt.pkg: {tt.dep}}
		got := violations(graph{imports: direct, deps: direct}, rules)
		if (len(got) > 0) != tt.want {
			t.Errorf("%s: violations %q, want some: %v", tt.why, got, tt.want)
		}
	}
	// net/http is excused only where every chain to it goes through kyaml.
	values, kyaml, spec := p("internal/values"), "sigs.k8s.io/kustomize/kyaml/yaml", "k8s.io/kube-openapi/pkg/validation/spec"
	chains := []struct {
		why     string
		imports map[string][]string
		want    bool
	}{
		{"the editor reaching net/http only through kyaml", map[string][]string{values: {kyaml}, kyaml: {spec}, spec: {"net/http"}}, false},
		{"the editor reaching net/http through kyaml and directly", map[string][]string{values: {kyaml, "net/http"}, kyaml: {spec}, spec: {"net/http"}}, true},
		{"the editor reaching net/http through another library", map[string][]string{values: {spec}, spec: {"net/http"}}, true},
		{"the editor reaching client-go through kyaml", map[string][]string{values: {kyaml}, kyaml: {"k8s.io/client-go/rest"}}, true},
	}
	for _, c := range chains {
		deps := map[string][]string{}
		for from := range c.imports {
			seen := map[string]bool{}
			var visit func(string)
			visit = func(n string) {
				for _, d := range c.imports[n] {
					if !seen[d] {
						seen[d] = true
						deps[from] = append(deps[from], d)
						visit(d)
					}
				}
			}
			visit(from)
		}
		got := violations(graph{imports: c.imports, deps: deps}, rules)
		if (len(got) > 0) != c.want {
			t.Errorf("%s: violations %q, want some: %v", c.why, got, c.want)
		}
	}
}
