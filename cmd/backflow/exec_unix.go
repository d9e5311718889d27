//go:build unix

package main

import "syscall"

// execCore replaces this process with the core: the same PID, so signals
// reach the core and its exit code is the process's. It returns only on
// failure.
func execCore(core string, argv, env []string) (int, error) {
	return 0, syscall.Exec(core, argv, env)
}
