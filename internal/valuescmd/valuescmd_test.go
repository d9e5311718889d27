package valuescmd_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/valuescmd"
)

// On the shared root, as both binaries build it, the global flags are
// checked before a values command runs, the values commands' errors carry
// their codes, and --version is the version command's line.
func TestGlobalFlagsValuesAndVersion(t *testing.T) {
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte("a: 1 # kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args      []string
		code      int
		out, errs string
	}{
		{[]string{"--log-level", "loud", "values", "get", "--file", f, "--path", "a"}, 2, "", `backflow: values get: --log-level: "loud": want debug, info, warn or error` + "\n"},
		{[]string{"values", "get", "--file", f, "--path", "a", "--log-format", "xml"}, 2, "", `backflow: values get: --log-format "xml": want json or text` + "\n"},
		{[]string{"--log-level=debug", "--log-format", "json", "values", "set", "--file", f, "--path", "a", "--value", "2"}, 0, "a: 2 # kept\n", ""},
		{[]string{"values", "get", "--file", f, "--path", "b"}, 1, "", "backflow: " + f + ": "},
		{[]string{"values", "get", "--bogus"}, 2, "", "backflow: values get: unknown flag: --bogus\nUsage: backflow values get "},
		{[]string{"version"}, 0, cliroot.VersionLine() + "\n", ""},
		{[]string{"--version"}, 0, cliroot.VersionLine() + "\n", ""},
		{[]string{"version", "extra"}, 2, "", "backflow: version: accepts 0 arg(s), received 1\nUsage: backflow version [flags]\n"},
	} {
		root := cliroot.New()
		cliroot.VersionTemplate(root)
		root.AddCommand(valuescmd.New("values"))
		var outb, errb bytes.Buffer
		code := cliroot.Execute(root, tc.args, &outb, &errb)
		out, errs := outb.String(), errb.String()
		if code != tc.code || out != tc.out || !strings.HasPrefix(errs, tc.errs) || (tc.errs == "") != (errs == "") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, stderr starting %q", tc.args, code, out, errs, tc.code, tc.out, tc.errs)
		}
	}
}
