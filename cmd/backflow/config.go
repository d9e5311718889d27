package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/render"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/spf13/cobra"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the repo config's schema, or check a repository's config",
		Long: `The repo config is .github/backflow.yaml in the GitOps repository: the
policy file, environments and their clusters, units and their values files,
roles, identities and pull request options. config/README.md documents every key.`,
	}
	cmd.AddCommand(newConfigSchemaCmd(), newConfigValidateCmd())
	return cmd
}

func newConfigSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of .github/backflow.yaml",
		Long: `schema prints the JSON Schema of the repo config .github/backflow.yaml,
generated from the Go types with every key described; editors can use it for
completion. It describes the shape only: the checks across keys (patterns
that overlap, environments that must exist, names) are made by the loader
and by "backflow config validate". Exit 0.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := repoconfig.JSONSchema()
			if err != nil {
				return fmt.Errorf("generating the schema: %w", err)
			}
			_, err = cmd.OutOrStdout().Write(s)
			return err
		},
	}
}

func newConfigValidateCmd() *cobra.Command {
	var repo string
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

Exit 0: valid. 1: invalid (every problem is listed on stderr).
2: DIR or its .github/backflow.yaml could not be read.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := repoconfig.Check(repo)
			if err != nil {
				if errors.Is(err, repoconfig.ErrUnreadable) {
					return usageError("%s: %v", repoconfig.Path, err)
				}
				return usageError("%v", err)
			}
			stderr := cmd.ErrOrStderr()
			for _, w := range rep.Warnings {
				fmt.Fprintln(stderr, "warning: "+w)
			}
			if rep.OK() {
				rep.Problems = append(rep.Problems, app.CheckCharts(cmd.Context(), repo, rep, render.NewFetcher(render.FetchOptions{}))...)
			}
			if !rep.OK() {
				for _, p := range rep.Problems {
					fmt.Fprintln(stderr, p)
				}
				return negative("%s: invalid (problems: %d)", repoconfig.Path, len(rep.Problems))
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
	return cmd
}
