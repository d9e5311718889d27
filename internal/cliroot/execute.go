package cliroot

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// annotationStreaming marks a command whose stdout is written as it goes (a
// long-running server's address line, a narrated demo): it is not held
// back until the command ends.
const annotationStreaming = "backflow.dev/streaming"

// Streaming marks cmd as one that writes stdout as it goes.
func Streaming(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotationStreaming] = "true"
	return cmd
}

// Execute runs root on args and maps the outcome to the exit codes of the
// command-line conventions: 0 success, 1 a negative answer, 2 could not
// run, the message on stderr after "backflow: ". Commands write through
// cmd.OutOrStdout and cmd.ErrOrStderr, so that tests can run them
// in-process.
func Execute(root *cobra.Command, args []string, stdout, stderr io.Writer) int {
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
	var ex *ExitError
	if errors.As(err, &ex) {
		if ex.Msg != "" {
			fmt.Fprintln(stderr, "backflow: "+ex.Msg)
		}
		return ex.Code
	}
	fmt.Fprintln(stderr, "backflow: "+err.Error())
	return 2
}
