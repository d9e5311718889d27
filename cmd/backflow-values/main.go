// Command backflow-values is `backflow values` as a small binary: the same
// get and set, flags, output and exit codes, for scripts and CI steps that
// make one edit per process. backflow links Helm, client-go, go-github and
// go-git, and Go runs every linked package's initialisation before main
// (about 10 ms: Helm's JSON schema compiler, client-go's scheme, the
// metrics); this binary links the values editor alone.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/backflow-dev/backflow/internal/valuescmd"
)

func main() {
	valuescmd.OneShotGC()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and maps the outcome to the exit codes of
// backflow's command-line conventions: 0 success, 1 a negative answer, 2
// could not run.
func run(args []string, stdout, stderr io.Writer) int {
	root := valuescmd.New("backflow-values")
	root.SilenceUsage = true
	root.SilenceErrors = true
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ex *valuescmd.ExitError
	if errors.As(err, &ex) {
		if ex.Msg != "" {
			fmt.Fprintln(stderr, "backflow-values: "+ex.Msg)
		}
		return ex.Code
	}
	fmt.Fprintln(stderr, "backflow-values: "+err.Error())
	return 2
}
