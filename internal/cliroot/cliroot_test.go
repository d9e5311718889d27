package cliroot

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func execute(t *testing.T, root *cobra.Command, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Execute(root, args, &out, &errb)
	return code, out.String(), errb.String()
}

// A command that prints and then cannot run leaves nothing on stdout; one
// that succeeds, or answers no, has its output written.
func TestStdoutHeldUntilTheEnd(t *testing.T) {
	for _, tc := range []struct {
		err      error
		code     int
		out, msg string
	}{
		{nil, 0, "partial\n", ""},
		{Negative("no: %s", "why"), 1, "partial\n", "backflow: no: why\n"},
		{SilentExit(1), 1, "partial\n", ""},
		{UsageError("x: cannot"), 2, "", "backflow: x: cannot\n"},
		{errors.New("plain"), 2, "", "backflow: plain\n"},
	} {
		root := New()
		root.AddCommand(&cobra.Command{Use: "speak", RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.Print("partial\n")
			return tc.err
		}})
		code, out, errs := execute(t, root, "speak")
		if code != tc.code || out != tc.out || errs != tc.msg {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.err, code, out, errs, tc.code, tc.out, tc.msg)
		}
	}
}

// A streaming command's stdout is written as it goes, even when it then
// cannot run.
func TestStreamingWritesThrough(t *testing.T) {
	root := New()
	root.AddCommand(Streaming(&cobra.Command{Use: "serve", RunE: func(cmd *cobra.Command, _ []string) error {
		cmd.Print("listening\n")
		return UsageError("serve: stopped")
	}}))
	if code, out, errs := execute(t, root, "serve"); code != 2 || out != "listening\n" || errs != "backflow: serve: stopped\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestVersionSetAtBuildTime(t *testing.T) {
	t.Cleanup(func() { SetVersion("") })
	SetVersion("v1.2.3")
	if got := VersionLine(); !strings.HasPrefix(got, "backflow v1.2.3 (go") {
		t.Errorf("version line %q", got)
	}
}

// The core takes the front's mark out of its environment, for the
// processes it starts, and warns only when both versions are known and
// differ.
func TestCheckHandedOff(t *testing.T) {
	defer SetVersion("")
	for _, tc := range []struct {
		front, core string
		set         bool
		warn        bool
	}{
		{set: false, core: "v1.2.0"},
		{front: "v1.2.0", core: "v1.2.0", set: true},
		{front: "v1.1.0", core: "v1.2.0", set: true, warn: true},
		{front: "dev", core: "v1.2.0", set: true},
	} {
		SetVersion(tc.core)
		if tc.set {
			t.Setenv(HandedOffEnv, tc.front)
		}
		got := CheckHandedOff()
		if _, still := os.LookupEnv(HandedOffEnv); still {
			t.Errorf("front %q: %s is still set", tc.front, HandedOffEnv)
		}
		want := ""
		if tc.warn {
			want = "backflow: warning: backflow is " + tc.front + " but backflow-core is " + tc.core + "; install both from one release"
		}
		if got != want {
			t.Errorf("front %q, core %q: %q, want %q", tc.front, tc.core, got, want)
		}
	}
}
