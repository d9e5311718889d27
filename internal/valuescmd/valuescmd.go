// Package valuescmd is the values commands, `values get` and `values set`,
// which both binaries run from the root they share (internal/cliroot):
// backflow answers them in its own process, a one-edit process that links
// the editor and nothing of the App, so none of Helm's, client-go's or the
// metrics' package initialisation runs before the edit.
package valuescmd

import (
	"errors"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// OneShotGC turns the collector off, below a memory limit, for a process
// that runs one values command and exits. One edit parses the file four
// times (before and after, with two readers) into short-lived trees, about
// twenty-five times the file's size; collecting them costs more than it
// frees (measured on a 5,981-line file: 37 ms per values set process with
// the collector, 31 ms without). It is the process's setting, so only a
// main calls it: commands run in-process (tests) keep the collector.
func OneShotGC() {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(512 << 20)
}

// New returns the values command with its get and set subcommands; use is
// its name.
func New(use string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: "Read and edit Helm values files without touching anything else",
		Long: `Read a value at a Helm --set style path (a.b[0].c, with \ to escape dots),
typed as Helm reads it, or set values with a byte-minimal edit: only the
edited tokens change; comments, blank lines, quoting and layout stay.`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cliroot.UsageError("values: choose a subcommand: get or set")
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cliroot.ArgsError(c, err)
	})
	cmd.AddCommand(newGetCmd(), newSetCmd())
	return cmd
}

// valuesFlags are the flags get and set share to choose what they read.
type valuesFlags struct {
	document int
	root     string
	inline   bool
}

func (f *valuesFlags) add(cmd *cobra.Command) {
	cmd.Flags().IntVar(&f.document, "document", -1, "the document's index (from 0) in a file of several")
	cmd.Flags().StringVar(&f.root, "root", "",
		"the path of a values mapping inside the document (spec.values); paths are read below it")
	cmd.Flags().BoolVar(&f.inline, "inline", false,
		"read the inline values of a Flux HelmRelease (spec.values) or Argo CD Application "+
			"(spec.source.helm.valuesObject)")
}

// options checks the flags and turns them into editor options; --document
// is -1 when not given.
func (f *valuesFlags) options(cmd *cobra.Command) (values.Options, error) {
	name := cmd.Name()
	if cmd.Flags().Changed("document") && f.document < 0 {
		return values.Options{}, cliroot.UsageError("values %s: --document must be 0 or more", name)
	}
	if f.inline && f.root != "" {
		return values.Options{}, cliroot.UsageError(
			"values %s: --inline finds the root itself: give --inline or --root, not both",
			name,
		)
	}
	opts := values.Options{Root: f.root, Inline: f.inline}
	if f.document >= 0 {
		n := f.document
		opts.Document = &n
	}
	return opts, nil
}

// valuesPathHelp is the path syntax both subcommands read.
const valuesPathHelp = `Paths use Helm's --set syntax: . between
keys, [N] for a list item, \ makes the next character literal (a\.b is the
key a.b); digits without brackets are a key (ports.80). A list item may also
be named by a field, as kyaml names it: env[name=TZ].value is the value of
the one item of env whose name is TZ (no item, several, or a field Helm reads
as another type is refused).

Inline values: --root P reads paths below the mapping at P in the document
(--root spec.values); --inline finds it by kind: a Flux HelmRelease
(helm.toolkit.fluxcd.io) keeps its values at spec.values, an Argo CD
Application (argoproj.io) at spec.source.helm.valuesObject. With several such
manifests in the file, --document N chooses one. Only the edited tokens of
the manifest change.`

func newGetCmd() *cobra.Command {
	var file, path string
	var flags valuesFlags
	cmd := &cobra.Command{
		Use:   "get --file F --path P [--document N] [--root P | --inline]",
		Short: "Print the value at a path as YAML (exit 1 when the path is missing)",
		Long: `get prints the value at --path as YAML, typed as Helm reads the file
(YAML 1.1: yes is true, 0755 is 493). --document N (from 0) chooses a
document in a file of several. Exit 0 with the value; 1 when the path names
nothing; 2 when the file or the path does not parse, or on a usage error.

` + valuesPathHelp,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" || path == "" {
				return cliroot.UsageError("values get: --file and --path are required")
			}
			opts, err := flags.options(cmd)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(file)
			if err != nil {
				return cliroot.UsageError("%v", err)
			}
			v, err := values.Get(data, path, opts)
			if err != nil {
				return valuesError(file, err)
			}
			out, err := sigsyaml.Marshal(v)
			if err != nil {
				return cliroot.UsageError("%s: %s: %v", file, path, err)
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "the values file")
	cmd.Flags().StringVar(&path, "path", "", "the value path, Helm --set syntax (a.b[0].c, a\\.b, env[name=TZ])")
	flags.add(cmd)
	return cmd
}

func newSetCmd() *cobra.Command {
	var file string
	var paths, vals []string
	var flags valuesFlags
	var inPlace bool
	cmd := &cobra.Command{
		Use:   "set --file F --path P --value V [--path P2 --value V2 ...] [--document N] [--root P | --inline] [--in-place]",
		Short: "Set values and print the new file (or replace it with --in-place)",
		Long: `Set the value at each --path to the --value given in the same position.
A value is read as a YAML 1.2 core-schema scalar: 4 is an int, 4.5 a float,
true/false a bool, null, a quoted scalar ("4", 'yes') a string, anything else
a string. Missing keys are created. The new file goes to stdout, or with
--in-place replaces the file atomically (same mode). An edit that cannot be
made safely is refused: exit 1 and no output.

` + valuesPathHelp,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" || len(paths) == 0 {
				return cliroot.UsageError("values set: --file, --path and --value are required")
			}
			opts, err := flags.options(cmd)
			if err != nil {
				return err
			}
			if len(paths) != len(vals) {
				return cliroot.UsageError(
					"values set: %d --path but %d --value: give one --value after each --path",
					len(paths),
					len(vals),
				)
			}
			edits := make([]values.Edit, len(paths))
			for i := range paths {
				v, err := values.ParseScalar(vals[i])
				if err != nil {
					return cliroot.UsageError("--value %s: %v", vals[i], err)
				}
				edits[i] = values.Edit{Path: paths[i], Value: v}
			}
			data, err := os.ReadFile(file)
			if err != nil {
				return cliroot.UsageError("%v", err)
			}
			out, _, err := values.Set(data, edits, opts)
			if err != nil {
				return valuesError(file, err)
			}
			if !inPlace {
				_, err = cmd.OutOrStdout().Write(out)
				return err
			}
			if string(out) == string(data) {
				return nil
			}
			if err := ReplaceFile(file, out); err != nil {
				return cliroot.UsageError("%v", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "the values file")
	cmd.Flags().StringArrayVar(&paths, "path", nil, "a value path, Helm --set syntax (repeatable)")
	cmd.Flags().StringArrayVar(&vals, "value", nil, "the value for the --path before it (repeatable)")
	flags.add(cmd)
	cmd.Flags().BoolVar(&inPlace, "in-place", false, "replace the file instead of printing it")
	return cmd
}

// valuesError maps the editor's errors to exit codes: a missing path, a
// refused edit or a failed verification is a negative answer (1); a file or
// path that does not parse means the command could not run (2).
func valuesError(file string, err error) error {
	var pe *yamlnode.PathError
	switch {
	case errors.As(err, &pe):
		return cliroot.UsageError("%v", err)
	case errors.Is(err, values.ErrNotFound):
		return cliroot.Negative("%s: %v", file, err)
	case errors.Is(err, values.ErrRefused):
		return cliroot.Negative("%s: refused: %v", file, err)
	case errors.Is(err, values.ErrVerify):
		return cliroot.Negative("%s: not written: %v", file, err)
	}
	return cliroot.UsageError("%s: %v", file, err)
}
