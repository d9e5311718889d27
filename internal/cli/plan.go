package cli

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/checkout"
	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
)

func newPlanCmd() *cobra.Command {
	var (
		repo, format, trust, nowFlag string
		paths                        []string
		hub                          hubFlags
	)
	cmd := &cobra.Command{
		Use:   "plan --repo DIR --observations PATH... [--format table|json|markdown]",
		Short: "Decide what to do with observed live changes (writes nothing)",
		Long: `Read the GitOps repository checked out at DIR (.github/backflow.yaml, the
policy and the values files, from the working tree) and the observations at
each PATH (a file or a directory of ObjectStateObserved documents, cub-scout
trace-diff JSON, watch JSONL or cub-scout receipts), and print one decision
per observed object: allow (with the values edit and its receipt), deny (with
every reason), noop, stale or unmapped, then the objects to look at again, the
notices (an object taken out of its GitOps controller's hands) and the errors
(a cub-scout status missing or inconclusive is an error, never noop). A
cub-scout "-" live is ambiguous (absent, null, "" or "-"), denied and never
written; a number it prints two ways (1e+06, 1000000) is one value; a list
length or a map printed as text is structure, denied; another cub-scout
command's output, and an empty file, are errors naming them. Nothing is
written.

--observations may be repeated; further PATHs may follow as arguments.
--trust is the highest attribution believed from these files: a document
claiming more is lowered to it (cub-scout outputs never name an actor).

Exit 0 whatever the outcomes; 2 when DIR, the repo config or the policy is
invalid or unreadable, a values file the config names is there but cannot
be read or is not YAML at all, an observations PATH does not exist, or an
observations file (or a document of it) is not YAML or JSON at all: each
is named on stderr and no plan is printed, since what the file held is
unknown. A values file that does not exist, and a document that is YAML
but not a valid observation, are among the plan's errors.

A unit whose desired state is a ConfigHub Unit (units[].confighub) is read
from the server --confighub-url names, with the bearer token in
--confighub-token-file (read only: ConfigHub is never written); a Unit that
cannot be read (no server given, unreachable, a refused token, another
toolchain than Kubernetes/YAML, data that does not parse) is as a values
file that cannot be read: exit 2, naming it.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if repo == "" {
				return cliroot.UsageError("plan: --repo is required")
			}
			paths = append(paths, args...)
			if len(paths) == 0 {
				return cliroot.UsageError("plan: --observations is required")
			}
			render, ok := planFormats[format]
			if !ok {
				return cliroot.UsageError("plan: --format %q: want table, json or markdown", format)
			}
			ceiling, err := observe.ParseAttribution(trust)
			if err != nil {
				return cliroot.UsageError("plan: --trust: %v", err)
			}
			now := time.Now()
			if nowFlag != "" {
				if now, err = time.Parse(time.RFC3339, nowFlag); err != nil {
					return cliroot.UsageError("plan: --now %q: want an RFC 3339 time", nowFlag)
				}
			}
			if info, err := os.Stat(repo); err != nil || !info.IsDir() {
				return cliroot.UsageError("plan: --repo %s: %s", repo, notADir(err))
			}
			opts, err := hub.options(cmd.Context())
			if err != nil {
				return cliroot.UsageError("plan: %v", err)
			}
			res, err := checkout.PlanCheckoutWith(repo, paths, ceiling, now, opts)
			var unreadable *checkout.UnreadableObservationsError
			var badValues *checkout.UnreadableValuesError
			switch {
			case errors.As(err, &unreadable), errors.As(err, &badValues):
				return cliroot.UsageError("plan: %v", err)
			case err != nil:
				return cliroot.UsageError("plan: --repo %s: %v", repo, err)
			}
			out, err := render(res)
			if err != nil {
				return cliroot.UsageError("plan: %v", err)
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "the checkout of the GitOps repository")
	cmd.Flags().StringArrayVar(&paths, "observations", nil, "a file or directory of observations (repeatable)")
	cmd.Flags().StringVar(&format, "format", "table", "output format: table, json or markdown")
	cmd.Flags().StringVar(
		&trust,
		"trust",
		string(observe.AttributionAuditLog),
		"the highest attribution believed from the observation files: "+
			"unknown, asserted, managed-fields, admission or audit-log",
	)
	cmd.Flags().StringVar(&nowFlag, "now", "", "plan as of this RFC 3339 time (default: the current time)")
	hub.register(cmd)
	return cmd
}

var planFormats = map[string]func(plan.Result) ([]byte, error){
	"table":    plan.Result.Table,
	"json":     plan.Result.JSON,
	"markdown": plan.Result.Markdown,
}

// notADir says why a path given as a folder is not one.
func notADir(statErr error) string {
	switch {
	case statErr == nil:
		return "not a directory"
	case errors.Is(statErr, fs.ErrNotExist):
		return "does not exist"
	}
	return statErr.Error()
}
