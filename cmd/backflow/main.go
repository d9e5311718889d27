// Command backflow is a GitHub App that does reverse reconciliation for
// GitOps repositories: it accepts authorized live changes back into the Helm
// values files that Git holds, through attributed pull requests that carry a
// machine-checkable receipt.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
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
	fmt.Fprintln(stderr, "backflow: "+err.Error())
	return 2
}
