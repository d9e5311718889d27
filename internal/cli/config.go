package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/checkout"
	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/kustomize/builder"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/render"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/yamlnode"
	"github.com/spf13/cobra"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the config files' JSON Schemas, or check a repository's config",
		Long: `The repo config is .github/backflow.yaml in the GitOps repository: the
policy file, environments and their clusters, units and their values files,
roles, identities and pull request options. The bot config is the file
"backflow run" and "backflow serve" read (the App's credentials, sources,
pacing, the server: section). config/README.md documents every key; "config
schema" prints the JSON Schema of each file, "config validate" checks a
checkout.`,
	}
	cmd.AddCommand(newConfigSchemaCmd(), newConfigValidateCmd())
	return cmd
}

func newConfigSchemaCmd() *cobra.Command {
	var kind string
	cmd := &cobra.Command{
		Use:   "schema [--kind repo|bot|policy]",
		Short: "Print the JSON Schema of a config file",
		Long: `schema prints the JSON Schema of one of backflow's config files, every key
described, for editors' completion and CI validation:

  repo    the repo config .github/backflow.yaml (the default)
  bot     the bot config of "backflow run" and "backflow serve", server:
          section included
  policy  a ReverseReconcilePolicy

The repo and bot schemas are generated from the Go types the strict decoder
fills, so they cannot drift from what is read. A schema describes the shape
only: the checks across keys (patterns that overlap, environments that
must exist, exclusive keys, secrets that must exist) are made by the
loaders, "backflow config validate" and "backflow policy check".

Exit 0; 2 for an unknown --kind.`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var (
				s   []byte
				err error
			)
			switch kind {
			case "repo":
				s, err = repoconfig.JSONSchema()
			case "bot":
				s, err = botconfig.BotJSONSchema()
			case "policy":
				s = policy.JSONSchema()
			default:
				return cliroot.UsageError("config schema: --kind %q: want repo, bot or policy", kind)
			}
			if err != nil {
				return fmt.Errorf("generating the schema: %w", err)
			}
			_, err = cmd.OutOrStdout().Write(s)
			return err
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "repo", "the config file: repo, bot or policy")
	return cmd
}

func newConfigValidateCmd() *cobra.Command {
	var (
		repo       string
		allowHosts []string
	)
	cmd := &cobra.Command{
		Use:   "validate --repo DIR",
		Short: "Check a checkout's repo config, policy and values files",
		Long: `validate reads DIR (a checkout of the GitOps repository) as backflow will:
.github/backflow.yaml, the policy it names, and every unit's values files,
which must exist and parse (with valuesRoot documents resolved). Every unit
whose chart names a path is rendered with its values files (the Helm SDK),
and each mayAccept entry that lists the unit's environment and an object the
chart renders for it is checked by changing its value path: the change must
move the entry's field on every such object, and nothing else; a mismatch is
a problem naming the entry. Warnings
(on stderr, exit 0) say where a policy valuePath is not yet in a unit's
values, or a role is named on one side only. On a valid repository, each
values file that units of more than one environment read is listed with
its readers ("shared: FILE: read by UNIT (ENV), ..."): a write-back for one
environment never edits such a file, it writes an override into the unit's
own, most specific values file instead, unless every environment reading
the file authorized the same change in the same plan.

Exit 0: valid. 1: invalid (every problem is listed on stderr), a policy
or values file the config names not there included. 2: DIR or its
.github/backflow.yaml could not be read, the policy or a values file is
there but could not be read (a symlink, not a regular file, too large), or
one of these files, or a chart's Chart.yaml, Chart.lock or values.yaml, is
not YAML at all; the file is named on stderr. Each kustomize unit is built (kustomize/api,
from the checkout's files only), and each policy entry for it must name
objects its build makes and a field at least one of them has.`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := checkout.Check(repo)
			if err != nil {
				return cliroot.UsageError("config validate: --repo %s: %v", repo, err)
			}
			stderr := cmd.ErrOrStderr()
			for _, w := range rep.Warnings {
				fmt.Fprintln(stderr, "warning: "+w)
			}
			if rep.OK() {
				fetch := render.NewFetcher(render.FetchOptions{AllowedHosts: allowHosts})
				rep.Problems = append(rep.Problems, checkout.CheckCharts(cmd.Context(), repo, rep, fetch)...)
				rep.Problems = append(rep.Problems, builder.Check(repo, rep.Config, rep.Policy)...)
				for _, p := range rep.Problems {
					if errors.Is(p, yamlnode.ErrUnparseable) {
						return cliroot.UsageError("config validate: --repo %s: %v", repo, p)
					}
				}
			}
			if !rep.OK() {
				for _, p := range rep.Problems {
					fmt.Fprintln(stderr, p)
				}
				return cliroot.Negative("%s: invalid (problems: %d)", repoconfig.Path, len(rep.Problems))
			}
			c := rep.Config
			fmt.Fprintf(cmd.OutOrStdout(), "%s: valid (environments: %d, units: %d, policy: %s, rules: %d, warnings: %d)\n",
				repoconfig.Path, len(c.Environments), len(c.Units), c.Policy, len(rep.Policy.Rules), len(rep.Warnings))
			for _, s := range c.SharedFiles() {
				fmt.Fprintf(cmd.OutOrStdout(), "shared: %s: read by %s\n", s.Path, strings.Join(s.Readers, ", "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&repo, "repo", ".", "checkout of the GitOps repository")
	cmd.Flags().StringArrayVar(
		&allowHosts,
		"allow-host",
		nil,
		"a host (host or host:port) charts' Chart.lock may fetch dependencies from and a fetch may be redirected to, "+
			"as the bot config's charts.allowedHosts (repeatable)",
	)
	return cmd
}
