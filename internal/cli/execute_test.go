package cli

import (
	"bytes"
	"strings"
	"testing"
)

// runCLI runs the command line in-process and returns its exit code and
// output, the way a user's shell would see them.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "backflow ") {
		t.Fatalf("version: code %d, stdout %q", code, out)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"no-such-command"},    // why: an unknown command cannot run
		{"version", "extra"},   // why: surplus arguments are a usage error
		{"version", "--bogus"}, // why: an unknown flag is a usage error
	} {
		if code, _, _ := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
