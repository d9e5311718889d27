package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/valuescmd"
)

// exitError carries an exit code out of a command. A command that has already
// printed its answer returns one with an empty msg.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// negative reports a negative answer (exit 1), printing msg on stderr when it
// is not empty.
func negative(format string, a ...any) error {
	return &exitError{code: 1, msg: fmt.Sprintf(format, a...)}
}

// silentExit ends the command with code without printing anything more.
func silentExit(code int) error { return &exitError{code: code} }

// usageError reports that the command could not run (exit 2).
func usageError(format string, a ...any) error {
	return &exitError{code: 2, msg: fmt.Sprintf(format, a...)}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "backflow",
		Short: "Accept authorized live changes back into GitOps desired state",
		Long: `backflow observes live changes to Kubernetes objects, decides under a
default-deny policy kept in the repository whether each change is authorized,
edits the Helm values file at the mapped path without touching anything else,
and opens an attributed pull request that carries a machine-checkable receipt.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return usageError("%v", err)
	})
	root.AddCommand(
		newLocalhubCmd(),
		newVersionCmd(),
		valuescmd.New("values"),
		newPlanCmd(),
		newServeCmd(),
		newRunCmd(),
		newDemoCmd(),
		newConfigCmd(),
		newVerifyCmd(), newReceiptsCmd(), newPolicyCmd(),
		newMapCmd(),
	)
	return root
}

// exactArgs is cobra.ExactArgs with the usage exit code.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError("%v", err)
		}
		return nil
	}
}

// minArgs is cobra.MinimumNArgs with the usage exit code.
func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.MinimumNArgs(n)(cmd, args); err != nil {
			return usageError("%v", err)
		}
		return nil
	}
}
