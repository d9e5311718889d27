package cli

import (
	"fmt"
	"strings"

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
and opens an attributed pull request that carries a machine-checkable receipt.

Every command keeps one contract. Exit 0: done (or a positive answer);
1: a negative answer (invalid, denied, some repository failed); 2: the
command could not run: a wrong flag or argument count (the error names the
command and its usage), or an input that cannot be read or parsed (the
error names the path as given). Nothing is written on stdout by a command
that exits 2, except by those that stream as they go (serve, localhub,
demo, app create). Logs go to stderr: --log-level and --log-format (json
or text) apply to every command; client-go's messages share the handler.`,
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return checkLogFlags(cmd)
		},
	}
	root.SetVersionTemplate(versionLine() + "\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError("%s: %v\nUsage: %s", commandName(c), err, c.UseLine())
	})
	addLogFlags(root)
	root.AddCommand(
		streaming(newLocalhubCmd()),
		newVersionCmd(),
		valuescmd.New("values"),
		newPlanCmd(),
		streaming(newServeCmd()),
		newRunCmd(),
		streaming(newDemoCmd()),
		newConfigCmd(),
		newVerifyCmd(), newReceiptsCmd(), newPolicyCmd(),
		newMapCmd(),
		newAppCmd(),
	)
	return root
}

// argsError is a wrong argument count: it names the command and its usage.
func argsError(cmd *cobra.Command, err error) error {
	return usageError("%s: %v\nUsage: %s", commandName(cmd), err, cmd.UseLine())
}

// commandName is the command's path below the root ("policy check"), the
// way messages after the "backflow: " prefix name it.
func commandName(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return cmd.Name()
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// exactArgs is cobra.ExactArgs with the usage exit code.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return argsError(cmd, err)
		}
		return nil
	}
}

// minArgs is cobra.MinimumNArgs with the usage exit code.
func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.MinimumNArgs(n)(cmd, args); err != nil {
			return argsError(cmd, err)
		}
		return nil
	}
}

// streaming marks a command whose stdout is written as it goes (a
// long-running server's address line, a narrated demo): it is not held
// back until the command ends.
const annotationStreaming = "backflow.dev/streaming"

func streaming(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotationStreaming] = "true"
	return cmd
}
