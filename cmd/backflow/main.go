package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/backflow-dev/backflow/internal/valuescmd"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "values" {
		valuescmd.OneShotGC()
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and maps the outcome to the exit codes of the
// command-line conventions: 0 success, 1 a negative answer, 2 could not run.
// Commands write through cmd.OutOrStdout and cmd.ErrOrStderr so that tests
// can run them in-process.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
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
