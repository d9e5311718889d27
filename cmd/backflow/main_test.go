package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/cli"
	"github.com/backflow-dev/backflow/internal/render"
)

// asProcess makes the test binary play a binary the front hands off to:
// "core" runs the whole command line as cmd/backflow-core's main does (the
// core's code, without a second link of the full program), "echo" prints
// what it was started with, so that the hand-off's argv, environment, PID,
// exit code and signals can be checked.
const asProcess = "BACKFLOW_TEST_AS"

func TestMain(m *testing.M) {
	render.ChildMain()
	switch os.Getenv(asProcess) {
	case "core":
		cli.Main("")
	case "echo":
		echo()
	}
	code := m.Run()
	if frontDir != "" {
		_ = os.RemoveAll(frontDir)
	}
	os.Exit(code)
}

// run answers args as main does when the front answers them itself, and
// reports whether it does.
func run(args []string, stdout, stderr io.Writer) (code int, own bool) {
	cmd := ownCommand(args)
	if cmd == core {
		return 0, false
	}
	return answer(cmd, args, stdout, stderr), true
}

// started is what the echo process prints.
type started struct {
	Args []string `json:"args"`
	PID  int      `json:"pid"`
	Mark string   `json:"mark"`
}

// echo prints how it was started; with ECHO_EXIT it exits with that code,
// with ECHO_WAIT it says so and exits 42 on SIGTERM.
func echo() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	b, _ := json.Marshal(started{Args: os.Args, PID: os.Getpid(), Mark: os.Getenv("ECHO_MARK")})
	fmt.Println(string(b))
	if os.Getenv("ECHO_WAIT") != "" {
		<-sigs
		os.Exit(42)
	}
	code := 0
	if c := os.Getenv("ECHO_EXIT"); c != "" {
		_, _ = fmt.Sscan(c, &code)
	}
	os.Exit(code)
}

// frontBin is the front built once from this package (go build), in
// frontDir.
var (
	frontOnce sync.Once
	frontDir  string
	frontBin  string
	frontErr  error
)

func builtFront(t *testing.T) string {
	t.Helper()
	frontOnce.Do(func() {
		frontDir, frontErr = os.MkdirTemp("", "backflow-front-")
		if frontErr != nil {
			return
		}
		frontBin = filepath.Join(frontDir, "backflow")
		out, err := exec.Command("go", "build", "-o", frontBin, ".").CombinedOutput()
		if err != nil {
			frontErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if frontErr != nil {
		t.Fatal(frontErr)
	}
	return frontBin
}

// testBinary is this test binary's resolved path: the core (and the echo)
// the front hands off to.
func testBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// process runs bin with args (argv[0] as given), env added to a clean
// environment of PATH alone, and returns its exit code and output.
func process(t *testing.T, bin, argv0 string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Args[0] = argv0
	cmd.Env = append([]string{"PATH=" + t.TempDir()}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return 0, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The front answers the values commands, version and --version itself,
// with exactly the core's exit codes, stdout and stderr, global flags
// anywhere on the line included; the cases are the values commands'
// contract: edits, negative answers, usage errors, unreadable inputs,
// help.
func TestValuesAnswerAsTheCore(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "values.yaml", "# replicas\nreplicas: 3 # keep\nname: web\nflag: yes\nmode: 0755\n")
	bad := writeFile(t, dir, "bad.yaml", "a: [1, 2\nb: 1\n")
	multi := writeFile(t, dir, "multi.yaml", "a: 1\n---\na: 2\n")
	inline := writeFile(t, dir, "release.yaml", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\nspec:\n  values:\n    replicaCount: 2 # by hand\n    env:\n    - name: TZ\n      value: UTC\n")
	missing := filepath.Join(dir, "nonexistent.yaml")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"values", "set", "--file", f, "--path", "replicas", "--value", "4"}, 0},
		{[]string{"values", "set", "--file", f, "--path", "name", "--value", "yes"}, 0},
		{[]string{"values", "set", "--file", f, "--path", "replicas", "--value", `"4"`, "--path", "extra.key", "--value", "x"}, 0},
		{[]string{"values", "set", "--file", f, "--path", "name.first", "--value", "x"}, 1},
		{[]string{"values", "set", "--file", f, "--path", "replicas"}, 2},
		{[]string{"values", "set", "--file", f, "--path", "a[", "--value", "1"}, 2},
		{[]string{"values", "set", "--file", missing, "--path", "a", "--value", "1"}, 2},
		{[]string{"values", "set", "--bogus"}, 2},
		{[]string{"values", "get", "--file", f, "--path", "flag"}, 0},
		{[]string{"values", "get", "--file", f, "--path", "mode"}, 0},
		{[]string{"values", "get", "--file", f, "--path", "missing"}, 1},
		{[]string{"values", "get", "--file", f, "--path", "a..b"}, 2},
		{[]string{"values", "get", "--file", missing, "--path", "a"}, 2},
		{[]string{"values", "get", "--file", bad, "--path", "b"}, 2},
		{[]string{"values", "get", "x"}, 2},
		{[]string{"values", "get", "--path", "a"}, 2},
		{[]string{"values", "get", "--file", multi, "--path", "a"}, 1},
		{[]string{"values", "get", "--file", multi, "--path", "a", "--document", "1"}, 0},
		{[]string{"values", "get", "--file", multi, "--path", "a", "--document", "-1"}, 2},
		{[]string{"values", "get", "--file", inline, "--inline", "--path", "env[name=TZ].value"}, 0},
		{[]string{"values", "get", "--file", inline, "--inline", "--root", "spec.values", "--path", "a"}, 2},
		{[]string{"values", "set", "--file", inline, "--inline", "--path", "replicaCount", "--value", "3"}, 0},
		{[]string{"values"}, 2},
		{[]string{"values", "help"}, 2},
		{[]string{"values", "--help"}, 0},
		{[]string{"values", "set", "-h"}, 0},
		{[]string{"values", "--help", "get"}, 0},
		{[]string{"--log-level", "loud", "values", "get", "--file", f, "--path", "flag"}, 2},
		{[]string{"values", "get", "--file", f, "--path", "flag", "--log-format", "xml"}, 2},
		{[]string{"--log-level=debug", "--log-format", "json", "values", "set", "--file", f, "--path", "replicas", "--value", "5"}, 0},
		{[]string{"values", "--log-level", "warn", "get", "--file", f, "--path", "replicas"}, 0},
		{[]string{"values", "get", "--version"}, 2},
		{[]string{"version"}, 0},
		{[]string{"version", "extra"}, 2},
		{[]string{"version", "--bogus"}, 2},
		{[]string{"version", "--help"}, 0},
		{[]string{"--log-format", "text", "version"}, 0},
		{[]string{"--version"}, 0},
		{[]string{"-v"}, 0},
		{[]string{"--version", "extra"}, 0},
		{[]string{"--log-level", "info", "--version"}, 0},
	} {
		var out, errb bytes.Buffer
		code, own := run(tc.args, &out, &errb)
		if !own {
			t.Errorf("%v: handed to the core, want it answered here", tc.args)
			continue
		}
		var coreOut, coreErr bytes.Buffer
		coreCode := cli.Run(tc.args, &coreOut, &coreErr)
		if code != tc.code || coreCode != tc.code {
			t.Errorf("%v: exit %d (the core's %d), want %d; stderr %q", tc.args, code, coreCode, tc.code, errb.String())
		}
		if out.String() != coreOut.String() || errb.String() != coreErr.String() {
			t.Errorf("%v: front and core differ:\nfront stdout %q\ncore  stdout %q\nfront stderr %q\ncore  stderr %q", tc.args, out.String(), coreOut.String(), errb.String(), coreErr.String())
		}
		if code == 0 && out.Len() == 0 {
			t.Errorf("%v: exit 0 and nothing on stdout", tc.args)
		}
	}
	if got, _ := os.ReadFile(f); !strings.HasPrefix(string(got), "# replicas\nreplicas: 3 # keep\n") {
		t.Errorf("the file changed without --in-place: %q", got)
	}
}

// --in-place replaces the file as the core does.
func TestInPlaceAsTheCore(t *testing.T) {
	const original = "a:\r\n  b: 1 # kept\r\n"
	var files [2]string
	for i := range files {
		files[i] = writeFile(t, t.TempDir(), "values.yaml", original)
	}
	args := func(f string) []string {
		return []string{"values", "set", "--file", f, "--path", "a.b", "--value", "2", "--in-place"}
	}
	var out, errb bytes.Buffer
	code, own := run(args(files[0]), &out, &errb)
	coreCode := cli.Run(args(files[1]), io.Discard, io.Discard)
	front, _ := os.ReadFile(files[0])
	core, _ := os.ReadFile(files[1])
	if !own || code != 0 || coreCode != 0 || out.Len() != 0 || errb.Len() != 0 {
		t.Fatalf("own %v, exit %d (core %d), stdout %q, stderr %q", own, code, coreCode, out.String(), errb.String())
	}
	if string(front) != "a:\r\n  b: 2 # kept\r\n" || string(front) != string(core) {
		t.Errorf("front wrote %q, core %q", front, core)
	}
}

// Every other command line is the core's: its commands, the root's help,
// the help and completion commands, the root with only global flags, and
// anything the root does not know.
func TestOtherCommandsHandedOff(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--help"},
		{"-h"},
		{"help"},
		{"help", "values"},
		{"completion", "bash"},
		{"__complete", "values", ""},
		{"serve", "--config", "x.yaml"},
		{"plan", "--repo", "."},
		{"--log-level", "debug", "plan"},
		{"config", "validate", "--repo", "."},
		{"demo"},
		{"no-such-command"},
		{"--log-level", "debug"},
		{"--bogus"},
		{"--version", "--help"},
		{"--help", "--version"},
		{"--version", "--log-level", "loud"},
		{"--help", "values", "get"},
		{"valuess", "get"},
	} {
		if code, own := run(args, io.Discard, io.Discard); own {
			t.Errorf("%q: answered here (exit %d), want it handed to the core", args, code)
		}
	}
}

// A hand-off replaces the process: the core runs with the same arguments,
// argv[0] as the user typed it, the same environment and the same PID, so
// its exit code is the process's and a signal to the PID reaches it.
func TestHandOffReplacesTheProcess(t *testing.T) {
	front := builtFront(t)
	env := []string{coreEnv + "=" + testBinary(t), asProcess + "=echo", "ECHO_MARK=kept", "ECHO_EXIT=7"}
	cmd := exec.Command(front, "serve", "--config", "x y.yaml", "--log-level", "debug")
	cmd.Args[0] = "typed-backflow"
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("exit %v, want the core's 7; stdout %q", err, out.String())
	}
	var got started
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("stdout %q: %v", out.String(), err)
	}
	want := []string{"typed-backflow", "serve", "--config", "x y.yaml", "--log-level", "debug"}
	if strings.Join(got.Args, "|") != strings.Join(want, "|") || got.Mark != "kept" || got.PID != cmd.Process.Pid {
		t.Errorf("the core started as %+v, want args %q, the environment's mark and PID %d", got, want, cmd.Process.Pid)
	}

	// A signal to the front's PID is the core's.
	wait := exec.Command(front, "serve")
	wait.Env = append(env, "ECHO_WAIT=1")
	stdout, err := wait.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatalf("the core did not start: %v", err)
	}
	if err := wait.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = wait.Wait()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 42 {
		t.Errorf("after SIGTERM: %v, want the core's exit 42", err)
	}
}

// The real core answers what the front hands it as it answers directly:
// a command's output and exit codes, its usage errors, the root's help.
func TestHandOffToTheCore(t *testing.T) {
	front := builtFront(t)
	dir := t.TempDir()
	policy := filepath.Join(dir, "missing-policy.yaml")
	env := []string{coreEnv + "=" + testBinary(t), asProcess + "=core"}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"config", "schema", "--kind", "bot"}, 0},
		{[]string{"policy", "check", policy}, 2},
		{[]string{"--log-level", "loud", "policy", "check", policy}, 2},
		{[]string{"no-such-command"}, 2},
		{[]string{"--help"}, 0},
		{[]string{}, 0},
	} {
		code, out, errs := process(t, front, "backflow", env, tc.args...)
		coreCode, coreOut, coreErrs := process(t, testBinary(t), "backflow-core", env, tc.args...)
		if code != tc.code || coreCode != tc.code || out != coreOut || errs != coreErrs {
			t.Errorf("%q: through the front exit %d, stdout %.80q, stderr %q; the core directly %d, %.80q, %q; want exit %d",
				tc.args, code, out, errs, coreCode, coreOut, coreErrs, tc.code)
		}
	}
}

// The core is backflow-core beside the front's resolved path (a symlinked
// install finds its real folder's core, not one beside the link), else on
// PATH; $BACKFLOW_CORE wins over both.
func TestCoreFound(t *testing.T) {
	front := builtFront(t)
	core := testBinary(t)
	install, links, onPath := t.TempDir(), t.TempDir(), t.TempDir()
	installed := filepath.Join(install, "backflow")
	if err := os.Link(front, installed); err != nil {
		if err := copyFile(front, installed); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(core, filepath.Join(install, coreName)); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(links, "backflow")
	if err := os.Symlink(installed, link); err != nil {
		t.Fatal(err)
	}
	decoy := writeFile(t, links, coreName, "#!/bin/sh\necho decoy\nexit 3\n")
	if err := os.Chmod(decoy, 0o755); err != nil {
		t.Fatal(err)
	}
	echoEnv := []string{asProcess + "=echo"}
	if code, out, errs := process(t, link, "backflow", echoEnv, "plan"); code != 0 || !strings.Contains(out, `"args":["backflow","plan"]`) {
		t.Errorf("through a symlink: exit %d, stdout %q, stderr %q; want backflow-core beside the resolved binary", code, out, errs)
	}

	alone := filepath.Join(t.TempDir(), "backflow")
	if err := copyFile(front, alone); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(core, filepath.Join(onPath, coreName)); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(alone, "plan")
	cmd.Env = append(echoEnv, "PATH="+onPath)
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), `"args":[`) {
		t.Errorf("on PATH: %v, stdout %q", err, out)
	}

	if code, out, errs := process(t, link, "backflow", append(echoEnv, coreEnv+"="+decoy), "plan"); code != 3 || out != "decoy\n" {
		t.Errorf("$%s: exit %d, stdout %q, stderr %q; want the core it names", coreEnv, code, out, errs)
	}
}

// Without a core the front says where it looked and how to install one,
// exits 2 and writes nothing on stdout; a $BACKFLOW_CORE that cannot run,
// or that names the front itself, is refused without looking further.
func TestNoCore(t *testing.T) {
	front := builtFront(t)
	alone := filepath.Join(t.TempDir(), "backflow")
	if err := copyFile(front, alone); err != nil {
		t.Fatal(err)
	}
	code, out, errs := process(t, alone, "backflow", nil, "serve")
	for _, want := range []string{
		"backflow: this command needs backflow-core",
		"$BACKFLOW_CORE is not set",
		filepath.Join(filepath.Dir(alone), coreName) + ": no such file or directory",
		"on PATH:",
		"go install github.com/backflow-dev/backflow/cmd/backflow@VERSION github.com/backflow-dev/backflow/cmd/backflow-core@VERSION",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr %q does not say %q", errs, want)
		}
	}
	if code != 2 || out != "" {
		t.Errorf("exit %d, stdout %q; want 2 and nothing", code, out)
	}
	// The values commands need no core.
	f := writeFile(t, t.TempDir(), "values.yaml", "a: 1\n")
	if code, out, errs := process(t, alone, "backflow", nil, "values", "set", "--file", f, "--path", "a", "--value", "2"); code != 0 || out != "a: 2\n" {
		t.Errorf("values set without a core: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// A core beside it, which a $BACKFLOW_CORE that cannot run must not
	// fall back to.
	if err := os.Symlink(testBinary(t), filepath.Join(filepath.Dir(alone), coreName)); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	for _, tc := range []struct{ core, want string }{
		{missing, coreEnv + "=" + missing + ": " + missing + ": no such file or directory"},
		{alone, "is this binary, backflow itself, not backflow-core"},
		{t.TempDir(), "not a regular file"},
	} {
		code, out, errs := process(t, alone, "backflow", []string{coreEnv + "=" + tc.core, asProcess + "=echo"}, "serve")
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%s=%s: exit %d, stdout %q, stderr %q; want 2 and %q", coreEnv, tc.core, code, out, errs, tc.want)
		}
	}
}

// A "core" that hands the command line back to backflow (a wrapper
// script of the front) is refused by the front it comes back to, naming
// the loop, instead of the two handing it on for ever.
func TestHandOffDoesNotLoop(t *testing.T) {
	front := builtFront(t)
	dir := t.TempDir()
	wrapper := writeFile(t, dir, "wrap", "#!/bin/sh\nexec "+front+" \"$@\"\n")
	if err := os.Chmod(wrapper, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(front, "plan", "--help")
	cmd.Env = []string{"PATH=/usr/bin:/bin", coreEnv + "=" + wrapper}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the front and its wrapper handed the command line on for a minute")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "was handed to backflow-core once already") {
		t.Errorf("exit %v, stdout %q, stderr %q; want 2 and the loop named", err, out.String(), errb.String())
	}
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}
