package cliroot

import (
	"github.com/spf13/cobra"
)

// New returns the root command with the global flags and the version
// command; both binaries add the values commands (package valuescmd, which
// builds on this package's exit codes), and the core every other command,
// with AddCommand.
//
// --version is declared (root.Version), but what it prints is not: cobra
// prints "backflow version V" unless given a template, and a template links
// text/template's evaluation, whose reflective method calls make the linker
// keep every exported method of every linked type: the front would grow
// from 7.7 to 13 MB with net/http and crypto/tls, which the editor links
// but never calls, to load in each process. The core sets the template
// (VersionTemplate); the front prints VersionLine itself.
func New() *cobra.Command {
	root := &cobra.Command{
		Use:   "backflow",
		Short: "Accept authorized live changes back into GitOps desired state",
		Long: `backflow observes live changes to Kubernetes objects, decides under a
default-deny policy kept in the repository whether each change is authorized,
edits desired state where the value comes from (a Helm values file, a plain
manifest, a kustomize overlay's source, a ConfigHub Unit) without touching
anything else, and opens an attributed pull request that carries a
machine-checkable receipt.

Every command keeps one contract. Exit 0: done (or a positive answer);
1: a negative answer (invalid, denied, some repository failed); 2: the
command could not run: a wrong flag or argument count (the error names the
command and its usage), or an input that cannot be read or parsed (the
error names the path as given). Nothing is written on stdout by a command
that exits 2, except by those that stream as they go (serve, localhub,
demo, app create). Logs go to stderr: --log-level and --log-format (json
or text) apply to every command; client-go's messages share the handler.`,
		Version:       Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return checkLogFlags(cmd)
		},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return UsageError("%s: %v\nUsage: %s", CommandName(c), err, c.UseLine())
	})
	addLogFlags(root)
	root.AddCommand(newVersionCmd())
	return root
}

// VersionTemplate makes root's --version print VersionLine, as version
// does.
func VersionTemplate(root *cobra.Command) {
	root.SetVersionTemplate(VersionLine() + "\n")
}
