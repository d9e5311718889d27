//go:build !unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
)

// execCore runs the core as a child where a process cannot replace itself
// (Windows), with this process's standard streams, and returns its exit
// code. The console delivers Ctrl+C to both: this process ignores it and
// waits for the core, so that the shell gets the prompt back, and the exit
// code, only when the core has shut down.
func execCore(core string, argv, env []string) (int, error) {
	signal.Ignore(os.Interrupt)
	cmd := exec.Command(core, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 0, err
	}
	return 0, nil
}
