package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/backflow-dev/backflow/internal/valuescmd"
)

// Main runs the process's command line (os.Args) and exits with its code;
// v is the version the binary was built as ("" when none was set). It alone
// may set what is one per process: client-go's klog goes to the command's
// logger, and a values command turns the collector off.
func Main(v string) {
	version = v
	if len(os.Args) > 1 && os.Args[1] == "values" {
		valuescmd.OneShotGC()
	}
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr, true))
}

// Run executes the command line in-process and maps the outcome to the exit
// codes of the command-line conventions: 0 success, 1 a negative answer, 2
// could not run. Commands write through cmd.OutOrStdout and cmd.ErrOrStderr
// so that tests can run them in-process; nothing one per process is set.
func Run(args []string, stdout, stderr io.Writer) int {
	return execute(args, stdout, stderr, false)
}

func execute(args []string, stdout, stderr io.Writer, process bool) int {
	root := newRootCmd()
	if process {
		root.Annotations = map[string]string{annotationProcess: "true"}
	}
	root.SetArgs(args)
	root.SetErr(stderr)
	// stdout is held until the command ends, so that a command that could
	// not run (exit 2) leaves nothing half-written there; streaming
	// commands write through.
	out := &heldWriter{w: stdout}
	root.SetOut(out)
	if c, _, err := root.Find(args); err == nil && c.Annotations[annotationStreaming] != "" {
		out.through = true
	}
	code := exitCode(root.Execute(), stderr)
	if code != 2 {
		if err := out.flush(); err != nil && code == 0 {
			fmt.Fprintln(stderr, "backflow: writing stdout: "+err.Error())
			code = 2
		}
	}
	return code
}

// heldWriter keeps what is written until flush, or passes it through.
type heldWriter struct {
	w       io.Writer
	through bool
	buf     []byte
}

func (h *heldWriter) Write(p []byte) (int, error) {
	if h.through {
		return h.w.Write(p)
	}
	h.buf = append(h.buf, p...)
	return len(p), nil
}

func (h *heldWriter) flush() error {
	if len(h.buf) == 0 {
		return nil
	}
	_, err := h.w.Write(h.buf)
	h.buf = nil
	return err
}

// exitCode prints err's message, if any, and maps it to the exit code.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ex *exitError
	if errors.As(err, &ex) {
		if ex.msg != "" {
			fmt.Fprintln(stderr, "backflow: "+ex.msg)
		}
		return ex.code
	}
	var vex *valuescmd.ExitError
	if errors.As(err, &vex) {
		if vex.Msg != "" {
			fmt.Fprintln(stderr, "backflow: "+vex.Msg)
		}
		return vex.Code
	}
	fmt.Fprintln(stderr, "backflow: "+err.Error())
	return 2
}
