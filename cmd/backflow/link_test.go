package main

import (
	"os/exec"
	"strings"
	"testing"
)

// heavy are the libraries the front must not link: each costs a one-edit
// process package initialisation before main (Helm's JSON schema compiler,
// client-go's scheme, the registries' clients, the metrics) and size to
// load; and the whole command line, which links them all.
var heavy = []string{
	"helm.sh/",
	"k8s.io/client-go/",
	"k8s.io/api/",
	"k8s.io/apimachinery/",
	"oras.land/",
	"github.com/google/go-github/",
	"github.com/go-git/",
	"github.com/prometheus/",
	"github.com/santhosh-tekuri/jsonschema/",
	"github.com/bradleyfalzon/ghinstallation/",
	"github.com/backflow-dev/backflow/internal/cli/",
}

// TestFrontLinksTheEditorAlone holds the front to what a values edit needs:
// none of the heavy libraries among the packages it links (go list), and,
// in the binary itself, nothing of net/http (which the editor's kyaml links
// but never calls) nor text/template's evaluation, whose reflection would
// keep every linked method alive and double the binary (a cobra template
// does that: see cliroot.New).
func TestFrontLinksTheEditorAlone(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list listed %d packages", len(deps))
	}
	for _, d := range deps {
		for _, h := range heavy {
			if strings.HasPrefix(d+"/", h) {
				t.Errorf("the front links %s", d)
			}
		}
	}

	nm, err := exec.Command("go", "tool", "nm", builtFront(t)).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	symbols := 0
	for line := range strings.Lines(string(nm)) {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		symbols++
		name := f[len(f)-1]
		for _, bad := range []string{"net/http.(*Client)", "net/http.(*Transport)", "crypto/tls.(*Conn)", "text/template.(*state).evalField"} {
			if strings.HasPrefix(name, bad) {
				t.Errorf("the front's binary keeps %s", name)
			}
		}
	}
	if symbols < 1000 {
		t.Fatalf("go tool nm listed %d symbols", symbols)
	}
}
