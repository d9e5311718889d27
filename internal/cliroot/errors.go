package cliroot

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// ExitError carries an exit code out of a command: 1 a negative answer, 2
// could not run. A command that has already printed its answer returns one
// with an empty Msg.
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string { return e.Msg }

// Negative reports a negative answer (exit 1), printing the message on
// stderr when it is not empty.
func Negative(format string, a ...any) error {
	return &ExitError{Code: 1, Msg: fmt.Sprintf(format, a...)}
}

// SilentExit ends the command with code without printing anything more.
func SilentExit(code int) error { return &ExitError{Code: code} }

// UsageError reports that the command could not run (exit 2).
func UsageError(format string, a ...any) error {
	return &ExitError{Code: 2, Msg: fmt.Sprintf(format, a...)}
}

// ArgsError is a wrong argument count: it names the command and its usage.
func ArgsError(cmd *cobra.Command, err error) error {
	return UsageError("%s: %v\nUsage: %s", CommandName(cmd), err, cmd.UseLine())
}

// CommandName is the command's path below the root ("policy check"), the
// way messages after the "backflow: " prefix name it.
func CommandName(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return cmd.Name()
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// ExactArgs is cobra.ExactArgs with the usage exit code.
func ExactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return ArgsError(cmd, err)
		}
		return nil
	}
}

// MinArgs is cobra.MinimumNArgs with the usage exit code.
func MinArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.MinimumNArgs(n)(cmd, args); err != nil {
			return ArgsError(cmd, err)
		}
		return nil
	}
}
