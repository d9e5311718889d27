package reliability

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/backflow-dev/backflow/internal/cli"
	"github.com/backflow-dev/backflow/internal/render"
)

var (
	fullRun     = flag.Bool("full", false, "run the full suite: larger counts and every variant")
	figuresFile = flag.String("figures", "", "write the table of figures as Markdown to `FILE` (or set "+figuresEnv+")")
)

// figuresEnv names the file of figures when the flag is not given, for
// runs through "go test ./..." where flags cannot reach one package.
const figuresEnv = "BACKFLOW_FIGURES"

// figure is one measured number of one case.
type figure struct {
	seq         int
	caseID      string
	name        string
	key, value  string
	pass, known bool
}

var figures struct {
	mu   sync.Mutex
	list []*figure
}

// count picks the short form's count, or the full form's under -full.
func count(short, full int) int {
	if *fullRun {
		return full
	}
	return short
}

// report logs a case's figures as stable FIGURE lines and keeps them for
// the table; each row's pass is the test's outcome, known when it ends.
func report(t *testing.T, caseID, name string, kv ...any) {
	t.Helper()
	if len(kv)%2 != 0 {
		t.Fatalf("report: odd key/value list %v", kv)
	}
	var line strings.Builder
	fmt.Fprintf(&line, "FIGURE case=%s name=%s", caseID, name)
	var rows []*figure
	figures.mu.Lock()
	for i := 0; i < len(kv); i += 2 {
		f := &figure{seq: len(figures.list), caseID: caseID, name: name, key: fmt.Sprint(kv[i]), value: formatValue(kv[i+1])}
		fmt.Fprintf(&line, " %s=%s", f.key, f.value)
		figures.list = append(figures.list, f)
		rows = append(rows, f)
	}
	figures.mu.Unlock()
	t.Log(line.String())
	t.Cleanup(func() {
		figures.mu.Lock()
		defer figures.mu.Unlock()
		for _, f := range rows {
			f.pass, f.known = !t.Failed(), true
		}
	})
}

func formatValue(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}

// caseOrder sorts "1" < "2" < ... < "7" < "7b" < "8" < ... < "15".
func caseOrder(id string) (int, string) {
	i := 0
	for i < len(id) && id[i] >= '0' && id[i] <= '9' {
		i++
	}
	n, _ := strconv.Atoi(id[:i])
	return n, id[i:]
}

// figureTable renders the figures as a Markdown table, by case.
func figureTable() string {
	figures.mu.Lock()
	list := append([]*figure(nil), figures.list...)
	figures.mu.Unlock()
	sort.SliceStable(list, func(i, j int) bool {
		ni, si := caseOrder(list[i].caseID)
		nj, sj := caseOrder(list[j].caseID)
		if ni != nj {
			return ni < nj
		}
		if si != sj {
			return si < sj
		}
		return list[i].seq < list[j].seq
	})
	var b strings.Builder
	b.WriteString("| case | name | figure | value | pass |\n| --- | --- | --- | --- | --- |\n")
	for _, f := range list {
		pass := "yes"
		if !f.known || !f.pass {
			pass = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", f.caseID, f.name, f.key, f.value, pass)
	}
	return b.String()
}

func TestMain(m *testing.M) {
	render.ChildMain()
	if os.Getenv(asCLI) == "1" {
		code := cli.Run(os.Args[1:], os.Stdout, os.Stderr)
		writePeakRSS()
		os.Exit(code)
	}
	flag.Parse()
	code := m.Run()
	path := *figuresFile
	if path == "" {
		path = os.Getenv(figuresEnv)
	}
	if path != "" {
		mode := "short"
		if *fullRun {
			mode = "full"
		}
		out := fmt.Sprintf("<!-- backflow reliability figures (%s form) -->\n%s", mode, figureTable())
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "writing figures to %s: %v\n", path, err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}
