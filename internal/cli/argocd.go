package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/hold"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

func newArgoCDCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "argocd",
		Short: "Generate the Argo CD setup that keeps self-heal off accepted fields",
		Long: `argocd generates, from a repository's config and policy, what an Argo CD
Application needs so that its self-heal does not revert a live change the
policy accepts while the write-back pull request waits: Argo CD has no
per-object hold. See "argocd ignore-differences".`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newArgoCDIgnoreCmd())
	return cmd
}

// argoApplication is the patch document: the Application fields the
// items and the sync option go to, as Argo CD's CRD names them.
type argoApplication struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		IgnoreDifferences []hold.IgnoreDifference `json:"ignoreDifferences"`
		SyncPolicy        struct {
			SyncOptions []string `json:"syncOptions"`
		} `json:"syncPolicy"`
	} `json:"spec"`
}

// argoUnitPatch is one unit's entry of the JSON output.
type argoUnitPatch struct {
	Unit        string          `json:"unit"`
	Environment string          `json:"environment"`
	Notes       []string        `json:"notes"`
	Application argoApplication `json:"application"`
}

func newArgoCDIgnoreCmd() *cobra.Command {
	var repo, environment, format string
	cmd := &cobra.Command{
		Use:   "ignore-differences --repo DIR [--environment ENV] [--format yaml|json]",
		Short: "Print each unit's Argo CD Application patch: ignoreDifferences and RespectIgnoreDifferences",
		Long: `ignore-differences reads DIR's .github/backflow.yaml and the policy it names
and prints, for every unit (of ENV with --environment) whose objects a
mayAccept entry accepts fields of, the fields of an Argo CD Application
(argoproj.io/v1alpha1) that keep its self-heal off those fields:
spec.ignoreDifferences, one item per object (API group and kind, name and
namespace) with the accepted fields as JSON pointers (spec.replicas is
/spec/replicas, containers[0] is /containers/0), and
spec.syncPolicy.syncOptions with RespectIgnoreDifferences=true, so a sync
of the rest of the Application keeps the live value too. Add the items to
the lists the Application already has: a JSON merge patch replaces lists.

Where a JSON pointer cannot say it, the item has a jq path expression
instead: a list item named by its merge key (containers[name=redis].image
is every container whose name is redis), and an object glob other than *
(a name redis-*, which Argo CD's exact name cannot match, becomes a
select() on the object). metadata.name is the name of the Application
document the unit's values are read from (valuesRoot), else the unit's
name, and a note says so. Each document's comments (the notes array in
JSON) say what the items cannot express: an entry's bounds (Argo CD ignores
the field whatever its value) and its acceptFor term (the item outlives
it). An ignored field is neither self-healed nor synced from Git until the
item is removed, including after the merge: deploy/README.md says how to
scope it.

Units that hold with a Flux controller, and units whose objects no entry
accepts, are skipped, each said on stderr.

--format yaml (the default) prints one YAML document per unit;
--format json prints one array of {unit, environment, notes, application}.

Exit 0: printed (nothing when no unit has an accepted field). 1: the repo
config or the policy is invalid (every problem on stderr). 2: DIR, its
.github/backflow.yaml or the policy cannot be read or is not YAML (the file
is named), --environment names no environment of the config, or --format is
unknown.`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "yaml" && format != "json" {
				return cliroot.UsageError("argocd ignore-differences: --format %q: want yaml or json", format)
			}
			cfg, p, err := loadRepoPolicy(cmd, repo)
			if err != nil {
				return err
			}
			if _, ok := cfg.Environments[environment]; environment != "" && !ok {
				return cliroot.UsageError("argocd ignore-differences: --environment %q: not an environment of %s",
					environment, repoconfig.Path)
			}
			patches, skips, err := hold.ArgoCD(cfg, p, environment)
			if err != nil {
				return cliroot.Negative("%v", err)
			}
			for _, s := range skips {
				fmt.Fprintf(cmd.ErrOrStderr(), "skipped: unit %s (%s): %s\n", s.Unit, s.Environment, s.Reason)
			}
			out, err := renderArgoPatches(patches, format)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&repo, "repo", ".", "checkout of the GitOps repository")
	fl.StringVar(&environment, "environment", "", "only the units of this environment")
	fl.StringVar(&format, "format", "yaml", "output format: yaml or json")
	return cmd
}

// loadRepoPolicy reads a checkout's repo config and the policy it names:
// an invalid one is exit 1 with its problems on stderr, an unreadable or
// unparseable one exit 2 naming the file.
func loadRepoPolicy(cmd *cobra.Command, repo string) (*repoconfig.Config, *policy.Policy, error) {
	name := cmd.CommandPath()
	name = strings.TrimPrefix(name, cmd.Root().Name()+" ")
	cfg, err := repoconfig.Load(repo)
	switch {
	case errors.Is(err, yamlnode.ErrUnparseable), errors.Is(err, repoconfig.ErrUnreadable):
		return nil, nil, cliroot.UsageError("%s: --repo %s: %v", name, repo, err)
	case err != nil:
		fmt.Fprintln(cmd.ErrOrStderr(), err)
		return nil, nil, cliroot.Negative("%s: invalid", repoconfig.Path)
	}
	data, err := repoconfig.ReadRepoFile(repo, cfg.Policy, policy.MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, cliroot.UsageError("%s: --repo %s: %s names policy %s, which does not exist",
			name, repo, repoconfig.Path, cfg.Policy)
	} else if err != nil {
		return nil, nil, cliroot.UsageError("%s: --repo %s: policy: %v", name, repo, err)
	}
	p, err := policy.Parse(cfg.Policy, data)
	var verr *policy.ValidationError
	switch {
	case errors.As(err, &verr):
		fmt.Fprintln(cmd.ErrOrStderr(), escapeLineBreaks(verr.Error()))
		return nil, nil, cliroot.Negative("%s: invalid", cfg.Policy)
	case err != nil:
		return nil, nil, cliroot.UsageError("%s: --repo %s: %v", name, repo, err)
	}
	return cfg, p, nil
}

// renderArgoPatches writes the patches: YAML documents with comments, or
// one JSON array.
func renderArgoPatches(patches []hold.ArgoCDPatch, format string) ([]byte, error) {
	all := make([]argoUnitPatch, 0, len(patches))
	for _, pt := range patches {
		u := argoUnitPatch{Unit: pt.Unit, Environment: pt.Environment, Notes: []string{}}
		if pt.NameGuessed {
			u.Notes = append(u.Notes, fmt.Sprintf("metadata.name is the unit's name: "+
				"use the name of the Application that deploys unit %s to %s", pt.Unit, pt.Environment))
		}
		u.Notes = append(u.Notes, pt.Notes...)
		a := &u.Application
		a.APIVersion, a.Kind, a.Metadata.Name = hold.ArgoCDAPIVersion, hold.ArgoCDKind, pt.Application
		a.Spec.IgnoreDifferences = pt.Ignore
		a.Spec.SyncPolicy.SyncOptions = []string{hold.RespectIgnoreDifferences}
		all = append(all, u)
	}
	if format == "json" {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(all); err != nil {
			return nil, fmt.Errorf("writing the patches: %w", err)
		}
		return b.Bytes(), nil
	}
	var b bytes.Buffer
	for i, u := range all {
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "# unit %s, environment %s: add these items to the lists of the Argo CD Application\n",
			escapeLineBreaks(u.Unit), escapeLineBreaks(u.Environment))
		b.WriteString("# that deploys it (spec.ignoreDifferences, spec.syncPolicy.syncOptions).\n")
		for _, n := range u.Notes {
			b.WriteString("# note: " + escapeLineBreaks(n) + "\n")
		}
		js, err := json.Marshal(u.Application)
		if err != nil {
			return nil, fmt.Errorf("writing the patch of unit %s: %w", u.Unit, err)
		}
		y, err := sigsyaml.JSONToYAML(js)
		if err != nil {
			return nil, fmt.Errorf("writing the patch of unit %s: %w", u.Unit, err)
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}
