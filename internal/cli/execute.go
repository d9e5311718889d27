package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/valuescmd"
)

// Main runs the process's command line (os.Args) and exits with its code;
// v is the version the binary was built as ("" when none was set). It alone
// may set what is one per process: client-go's klog goes to the command's
// logger, and a values command turns the collector off.
func Main(v string) {
	cliroot.SetVersion(v)
	if warning := cliroot.CheckHandedOff(); warning != "" {
		fmt.Fprintln(os.Stderr, warning)
	}
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
	return cliroot.Execute(root, args, stdout, stderr)
}
