// Command backflow is backflow's command line as users run it, a small
// binary in front of the whole program. It runs the values commands
// (values get, values set), version and --version in its own process, and
// replaces itself with backflow-core (cmd/backflow-core, the whole command
// line) for every other command line, help and completion included: the
// same arguments, argv[0] as typed, the same environment, the same PID, so
// that signals and the exit code are the core's own (serve runs as PID 1 in
// the image).
//
// Go runs every linked package's initialisation before main: the core links
// Helm, client-go, the OCI registry clients, go-github, go-git and the
// metrics, about 15 ms of it before a one-edit process could start its
// edit. This binary links the values editor and the command line's shared
// root (internal/cliroot) alone, so `backflow values set` costs what the
// edit costs, and answers exactly as the core does: both build their root
// there.
//
// The core is $BACKFLOW_CORE when set, else backflow-core beside this
// binary (symlinks resolved), else backflow-core on PATH; without one,
// backflow says where it looked and exits 2.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/valuescmd"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func main() {
	cliroot.SetVersion(version)
	args := os.Args[1:]
	cmd := ownCommand(args)
	if cmd == core {
		os.Exit(handOff(os.Args, os.Environ(), os.Stderr))
	}
	if cmd == values {
		valuescmd.OneShotGC()
	}
	os.Exit(answer(cmd, args, os.Stdout, os.Stderr))
}

// answer runs args, a command line the front answers itself (cmd, from
// ownCommand), and returns the exit code.
func answer(cmd command, args []string, stdout, stderr io.Writer) int {
	if cmd == versionFlag {
		return printVersion(stdout, stderr)
	}
	return cliroot.Execute(newRoot(), args, stdout, stderr)
}

// printVersion prints what the core's --version prints: the front does not
// give cobra the version template (see cliroot.New).
func printVersion(stdout, stderr io.Writer) int {
	if _, err := fmt.Fprintln(stdout, cliroot.VersionLine()); err != nil {
		fmt.Fprintln(stderr, "backflow: writing stdout: "+err.Error())
		return 2
	}
	return 0
}

// newRoot is the command line the front answers: the shared root (global
// flags, version) and the values commands, as the core has them.
func newRoot() *cobra.Command {
	root := cliroot.New()
	root.AddCommand(valuescmd.New("values"))
	return root
}

// A command line the front answers itself, or the core's.
type command int

const (
	core        command = iota // every other command line
	values                     // values, values get, values set
	versionCmd                 // version
	versionFlag                // --version on the root
)

// ownCommand says whether the front answers args itself: a values command
// or version, with the global flags before, between or after the command's
// words, or --version on the root. Cobra finds the command on the shared
// root exactly as the core's root would; a word the shared root does not
// know (every other command, help, completion) and the root without
// --version (its help, which lists the core's commands) are the core's.
func ownCommand(args []string) command {
	root := newRoot()
	c, rest, err := root.Find(args)
	if err != nil {
		return core
	}
	if c != root {
		for c.Parent() != root {
			c = c.Parent()
		}
		if c.Name() == "values" {
			return values
		}
		return versionCmd
	}
	if askVersion(root, rest) {
		return versionFlag
	}
	return core
}

// askVersion says whether the root's flags in args ask for the version and
// not for help, which is what the root then prints.
func askVersion(root *cobra.Command, args []string) bool {
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	if err := root.ParseFlags(args); err != nil {
		return false
	}
	help, _ := root.Flags().GetBool("help")
	v, _ := root.Flags().GetBool("version")
	return v && !help
}
