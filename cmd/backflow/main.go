package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "values" {
		oneShotGC()
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// oneShotGC turns the collector off, below a memory limit, for a process
// that runs one values command and exits. One edit parses the file four
// times (before and after, with two readers) into short-lived trees, about
// twenty-five times the file's size; collecting them costs more than it
// frees (measured on a 5,981-line file: 37 ms per values set process with
// the collector, 31 ms without). It is the process's setting, so only main
// makes it: commands run in-process (tests) keep the collector.
func oneShotGC() {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(512 << 20)
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
