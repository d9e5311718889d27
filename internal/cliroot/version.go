package cliroot

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the binary's, set by its main package (which has it set at
// build time with -ldflags "-X main.version=...") through SetVersion.
var version = ""

// SetVersion records the version the binary was built as; "" when none was
// set, and the module's version or dev is reported.
func SetVersion(v string) { version = v }

// Version is the binary's version: set at build time, else the module
// version, else dev.
func Version() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

// VersionLine is what version and --version print.
func VersionLine() string {
	return fmt.Sprintf("backflow %s (%s, %s/%s)", Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the backflow version",
		Long: `version prints the version of this binary (set at build time, else the
module version, else dev), the Go release it was built with and its
platform, as "backflow --version" does. Exit 0.`,
		Args: ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), VersionLine())
			return nil
		},
	}
}

// HandedOffEnv is set by backflow (cmd/backflow) in the environment of the
// backflow-core it hands a command line to, to its own version: the core
// removes it, so that the processes it starts see the environment the user
// gave, and warns when the two binaries are not the same version.
const HandedOffEnv = "BACKFLOW_HANDED_OFF"

// CheckHandedOff removes HandedOffEnv from the process's environment and
// returns a warning when the front that set it is another version than
// this binary: both should come from one release. Versions that are not
// set at build time (dev) are not compared.
func CheckHandedOff() string {
	front, ok := os.LookupEnv(HandedOffEnv)
	if !ok {
		return ""
	}
	_ = os.Unsetenv(HandedOffEnv)
	core := Version()
	if front == core || front == "dev" || core == "dev" {
		return ""
	}
	return fmt.Sprintf(
		"backflow: warning: backflow is %s but backflow-core is %s; install both from one release",
		front,
		core,
	)
}
