package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/values"
)

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Check a ReverseReconcilePolicy and explain its decisions",
		Long: `policy works with a ReverseReconcilePolicy file, the default-deny list of
the changes each role may have accepted back into Git: "policy check"
validates it strictly, "policy explain" says whether it authorizes one
change and why. "backflow config schema --kind policy" prints its JSON
Schema.`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newPolicyCheckCmd(), newPolicyExplainCmd())
	return cmd
}

func newPolicyCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check POLICY",
		Short: "Validate a policy file",
		Long: `check validates a ReverseReconcilePolicy strictly. Valid: exit 0 and a
one-line summary. Invalid: exit 1 and one line per error on stdout,
"<file>: <place>: <message>". Exit 2 when the file cannot be read or is not
one YAML mapping.`,
		Args: cliroot.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadPolicy(cmd.OutOrStdout(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), escapeLineBreaks(summary(args[0], p)))
			return nil
		},
	}
}

// loadPolicy loads a policy for a command: validation errors go to out, one
// per line, with exit 1; an unreadable file is exit 2.
func loadPolicy(out io.Writer, path string) (*policy.Policy, error) {
	p, err := policy.Load(path)
	var verr *policy.ValidationError
	switch {
	case errors.As(err, &verr):
		for _, fe := range verr.Errors {
			fmt.Fprintln(out, escapeLineBreaks(verr.File+": "+fe.Error()))
		}
		return nil, cliroot.SilentExit(1)
	case err != nil:
		return nil, cliroot.UsageError("cannot read policy: %v", err)
	}
	return p, nil
}

// summary is the one-line description of a valid policy.
func summary(path string, p *policy.Policy) string {
	var roles []string
	entries, autoMerge := 0, 0
	for _, r := range p.Rules {
		if !contains(roles, r.Role) {
			roles = append(roles, r.Role)
		}
		for _, a := range r.MayAccept {
			entries++
			if a.AutoMerge {
				autoMerge++
			}
		}
	}
	name := p.Name
	if name == "" {
		name = "(unnamed)"
	}
	s := fmt.Sprintf(
		"%s: valid %s %s: default deny, %d rule(s), %d mayAccept entr%s (%d auto-merge)",
		path,
		p.Kind,
		name,
		len(p.Rules),
		entries,
		plural(entries, "y", "ies"),
		autoMerge,
	)
	if len(roles) > 0 {
		s += ", roles: " + strings.Join(roles, ", ")
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

type explainFlags struct {
	policy, environment, object, field, valuePath, value string
	roles                                                []string
}

func newPolicyExplainCmd() *cobra.Command {
	var f explainFlags
	cmd := &cobra.Command{
		Use:   "explain --policy POLICY --role R [--role R2] --environment E --object O --field F --value-path P [--value V]",
		Short: "Explain whether the policy authorizes a change",
		Long: `explain evaluates one request under the policy's default deny. The first
line of stdout is "allow" or "deny". An allow names the matched entry, its
role, whether it is pre-authorized for auto-merge, and the rule's reason. A
deny lists every reason that applied, one per line as "- <kind>: <message>",
where kind is one of no-rule-for-role, field-not-accepted, object-not-listed,
environment-not-listed, value-out-of-bounds, value-missing. Exit 0 either way;
exit 1 when the policy is invalid (its errors on stderr), 2 when it cannot be
read.

--value is read as a YAML 1.2 core-schema scalar: 4 is an int, 4.5 a float,
true a bool, null null, '"4"' the string 4, anything else a string. Without
--value, an entry that bounds the value does not authorize.`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := policy.Request{
				Roles:       f.roles,
				Environment: f.environment,
				Object:      f.object,
				Field:       f.field,
				ValuePath:   f.valuePath,
			}
			if cmd.Flags().Changed("value") {
				v, err := values.ParseScalar(f.value)
				if err != nil {
					return cliroot.UsageError("--value: %v", err)
				}
				req.Value, req.HasValue = v, true
			}
			p, err := loadPolicy(cmd.ErrOrStderr(), f.policy)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), explain(p.Evaluate(req)))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.policy, "policy", "", "the ReverseReconcilePolicy file (required)")
	fl.StringArrayVar(&f.roles, "role", nil, "a role of the actor (repeatable; required)")
	fl.StringVar(&f.environment, "environment", "", "the environment (required)")
	fl.StringVar(&f.object, "object", "", "the object key apiVersion|kind|namespace|name (required)")
	fl.StringVar(&f.field, "field", "", "the Kubernetes field path, e.g. spec.replicas (required)")
	fl.StringVar(&f.valuePath, "value-path", "", "the Helm values path, e.g. replica.replicaCount (required)")
	fl.StringVar(&f.value, "value", "", "the value to accept, as a YAML 1.2 scalar")
	for _, name := range []string{"policy", "role", "environment", "object", "field", "value-path"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// explain writes a decision for people and scripts: the verdict alone on
// the first line, then one detail per line.
func explain(d policy.Decision) string {
	var b strings.Builder
	if d.Allowed {
		m := d.Match
		fmt.Fprintf(&b, "allow\nmatched: %s (role %s)\nautoMerge: %t\n", m.Path(), escapeLineBreaks(m.Role), m.AutoMerge)
		if m.Reason != "" {
			fmt.Fprintf(&b, "reason: %s\n", escapeLineBreaks(m.Reason))
		}
		return b.String()
	}
	b.WriteString("deny\n")
	for _, r := range d.Reasons {
		fmt.Fprintf(&b, "- %s\n", escapeLineBreaks(r.String()))
	}
	return b.String()
}
