// Package monitoring holds the Grafana dashboard and the Prometheus alert
// rules for backflow serve; its test checks them against the metrics the
// binary serves.
package monitoring

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type dashboard struct {
	UID    string `json:"uid"`
	Title  string `json:"title"`
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// exposition is what /metrics serves as soon as serve starts: no cycle has
// run, no request has been made.
func exposition(t *testing.T) string {
	t.Helper()
	rr := httptest.NewRecorder()
	app.NewMetrics("test").Handler().ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
	b, err := io.ReadAll(rr.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	metricRef = regexp.MustCompile(`\b(backflow_[a-z0-9_]+)(\{([^}]*)\})?`)
	eqMatcher = regexp.MustCompile(`(\w+)="([^"]*)"`)
	promDur   = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)
)

// checkExpr says what is wrong with a query against the exposition: an
// unbalanced bracket, a metric that is not served, or a label value that
// no series has yet (so the query would see nothing rather than zero).
func checkExpr(expr, expo string) []string {
	var problems []string
	depth := map[rune]int{}
	pairs := map[rune]rune{')': '(', '}': '{', ']': '['}
	inQuote := false
	for _, r := range expr {
		switch {
		case r == '"':
			inQuote = !inQuote
		case inQuote:
		case r == '(' || r == '{' || r == '[':
			depth[r]++
		case pairs[r] != 0:
			if depth[pairs[r]]--; depth[pairs[r]] < 0 {
				problems = append(problems, fmt.Sprintf("unbalanced %q", r))
			}
		}
	}
	for r, n := range depth {
		if n != 0 {
			problems = append(problems, fmt.Sprintf("unbalanced %q", r))
		}
	}
	if inQuote {
		problems = append(problems, "unterminated string")
	}
	refs := metricRef.FindAllStringSubmatch(expr, -1)
	if len(refs) == 0 {
		problems = append(problems, "names no backflow metric")
	}
	for _, m := range refs {
		name := m[1]
		var series []string
		for _, line := range strings.Split(expo, "\n") {
			if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
				series = append(series, line)
			}
		}
		if len(series) == 0 {
			problems = append(problems, name+": not served on /metrics")
			continue
		}
		for _, lm := range eqMatcher.FindAllStringSubmatch(m[3], -1) {
			want := lm[1] + `="` + lm[2] + `"`
			found := false
			for _, s := range series {
				found = found || strings.Contains(s, want)
			}
			if !found {
				problems = append(problems, fmt.Sprintf("%s{%s}: no such series on /metrics", name, want))
			}
		}
	}
	return problems
}

func TestAlertRules(t *testing.T) {
	data, err := os.ReadFile("alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	errs, err := yamlnode.DecodeFile(data, &rf, yamlnode.Options{MaxNodes: 10_000})
	if err != nil || len(errs) > 0 {
		t.Fatalf("alerts.yaml: %v %v", err, errs)
	}
	expo := exposition(t)
	alerts := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || alerts[r.Alert] {
				t.Errorf("group %s: alert name %q empty or repeated", g.Name, r.Alert)
			}
			alerts[r.Alert] = true
			if r.For != "" && !promDur.MatchString(r.For) {
				t.Errorf("%s: for %q is not a Prometheus duration", r.Alert, r.For)
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: wants a severity label and summary and description annotations", r.Alert)
			}
			for _, p := range checkExpr(r.Expr, expo) {
				t.Errorf("%s: %s", r.Alert, p)
			}
		}
	}
	// The failure modes the rules are for.
	for _, a := range []string{"BackflowCyclesFailing", "BackflowRateLimitReached", "BackflowReceiptsRefused", "BackflowWebhookSignatureFailures", "BackflowAttributionUnknown"} {
		if !alerts[a] {
			t.Errorf("no alert %s", a)
		}
	}
}

func TestDashboard(t *testing.T) {
	data, err := os.ReadFile("dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	var d dashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard without uid, title or panels: %+v", d)
	}
	expo := exposition(t)
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] || len(p.Targets) == 0 {
			t.Errorf("panel %q: id %d repeated or no query", p.Title, p.ID)
		}
		ids[p.ID] = true
		for _, tg := range p.Targets {
			for _, prob := range checkExpr(tg.Expr, expo) {
				t.Errorf("panel %q: %s", p.Title, prob)
			}
		}
	}
}

// The check finds what it is for: a metric that is not served, a label
// value no series has, a bracket left open.
func TestCheckExprFindsProblems(t *testing.T) {
	expo := exposition(t)
	for _, tc := range []struct{ expr, want string }{
		{`rate(backflow_cycles_totl[5m])`, "not served"},
		{`rate(backflow_cycles_total{result="failed"}[5m])`, "no such series"},
		{`sum(rate(backflow_cycles_total[5m])`, "unbalanced"},
		{`rate(up[5m])`, "names no backflow metric"},
	} {
		got := strings.Join(checkExpr(tc.expr, expo), "; ")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.expr, got, tc.want)
		}
	}
	if p := checkExpr(`sum by (kind) (increase(backflow_errors_total{kind="rate-limited"}[15m]))`, expo); len(p) > 0 {
		t.Errorf("a served series: %v", p)
	}
}
