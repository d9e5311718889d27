package cli

import (
	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/cliroot"
)

// newRootCmd is the whole command line: the root both binaries share
// (global flags, version, values) and every other command.
func newRootCmd() *cobra.Command {
	root := cliroot.New()
	cliroot.VersionTemplate(root)
	root.AddCommand(
		cliroot.Streaming(newLocalhubCmd()),
		newPlanCmd(),
		cliroot.Streaming(newServeCmd()),
		newRunCmd(),
		cliroot.Streaming(newDemoCmd()),
		newConfigCmd(),
		newVerifyCmd(), newReceiptsCmd(), newPolicyCmd(),
		newMapCmd(),
		newAppCmd(),
	)
	return root
}
