package cli

import (
	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/valuescmd"
)

// newRootCmd is the whole command line: the root both binaries share
// (global flags, version), the values commands and every other command.
func newRootCmd() *cobra.Command {
	root := cliroot.New()
	cliroot.VersionTemplate(root)
	root.AddCommand(
		valuescmd.New("values"),
		cliroot.Streaming(newLocalhubCmd()),
		newPlanCmd(),
		cliroot.Streaming(newServeCmd()),
		newRunCmd(),
		cliroot.Streaming(newDemoCmd()),
		newConfigCmd(),
		newVerifyCmd(), newReceiptsCmd(), newPolicyCmd(),
		newMapCmd(),
		newAppCmd(),
		newArgoCDCmd(),
	)
	return root
}
