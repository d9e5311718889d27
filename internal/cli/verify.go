package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

func newVerifyCmd() *cobra.Command {
	var policyPath, repoDir, base, head, configPath string
	cmd := &cobra.Command{
		Use:   "verify --policy POLICY RECEIPT... | verify --repo DIR --base REF --head REF",
		Short: "Verify reverse-reconcile receipts, or a pull request's whole diff, against the authority policy",
		Long: `verify checks every property of each ReverseReconcileReceipt: the seed's
verifier rules and backflow's additions. POLICY's path as given (cleaned,
/-separated, relative to the working directory) is the policyRef every receipt
must name. A receipt passes only as an authorized write-back.

All pass: exit 0 and "verified N receipt(s)". Otherwise exit 1 and one line per
violation, "<file>: <property>: <message>", for the policy and the receipts.
Exit 2 when a file cannot be read or parsed, after checking the others:
then stdout stays empty and their violations are listed on stderr.
Unknown keys in a receipt are warnings on stderr.

With --repo, verify checks a pull request's whole diff instead, in the git
checkout DIR: the changes from the merge base of --base and --head to
--head (what GitHub shows as the pull request's files), against the repo
config (--config) and the policy it names, both read at --base, never at
the head. It passes only when every changed file is a receipt under the
receipts folder or a values file one of those receipts names; every value
path that changed in those values files (compared as parsed YAML, path by
path, as Helm reads them: comments and formatting do not count) is claimed
by a receipt's changed field with that valuesFile and that new value; and
every receipt verifies against the base branch's policy. A diff that adds or
changes no receipt claims no authority: it passes with a note, to be
reviewed as any other pull request. This is the same check the App runs as
backflow/receipt. Exit 0: within bounds. 1: one line per violation,
"<file>: <problem>". 2: DIR, a ref, or the base's config could not be read.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if repoDir != "" {
				return cliroot.ExactArgs(0)(cmd, args)
			}
			return cliroot.MinArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if repoDir != "" {
				if base == "" || head == "" {
					return cliroot.UsageError("--repo needs --base and --head")
				}
				return runVerifyDiff(cmd.OutOrStdout(), repoDir, base, head, configPath)
			}
			if policyPath == "" {
				return cliroot.UsageError("--policy is required (or --repo, --base and --head for a whole diff)")
			}
			return runVerify(cmd.OutOrStdout(), cmd.ErrOrStderr(), policyPath, args)
		},
	}
	cmd.Flags().StringVar(&policyPath, "policy", "", "the ReverseReconcilePolicy file (receipts mode)")
	cmd.Flags().StringVar(&repoDir, "repo", "", "a git checkout: check the whole diff of --base...--head")
	cmd.Flags().StringVar(&base, "base", "", "with --repo: the pull request's base (a branch, remote ref or SHA)")
	cmd.Flags().StringVar(&head, "head", "", "with --repo: the pull request's head")
	cmd.Flags().StringVar(&configPath, "config", repoconfig.Path, "with --repo: the repo config's path at --base")
	return cmd
}

func runVerify(stdout, stderr io.Writer, policyPath string, receipts []string) error {
	wd, err := os.Getwd()
	if err != nil {
		return cliroot.UsageError("cannot determine the working directory: %v", err)
	}
	ref, err := receipt.PolicyRef(policyPath, wd)
	if err != nil {
		return cliroot.UsageError("%v", err)
	}
	unreadable, violations := false, 0
	var found []string // the violations, in the order checked
	pol, err := policy.Load(policyPath)
	var verr *policy.ValidationError
	switch {
	case errors.As(err, &verr):
		// Rule 1 (and every other invalid place): reported like a receipt's
		// violations. The invalid policy authorizes nothing, so the receipts
		// are still checked and their fields reported as unauthorized.
		for _, fe := range verr.Errors {
			found = append(found, escapeLineBreaks(policyPath+": "+fe.Error()))
			violations++
		}
	case err != nil:
		fmt.Fprintf(stderr, "backflow: cannot read policy: %v\n", err)
		unreadable = true
	}
	for _, path := range receipts {
		c := receipt.CheckFile(path, pol, ref)
		if c.Err != nil {
			fmt.Fprintf(stderr, "backflow: cannot read receipt: %v\n", c.Err)
			unreadable = true
			continue
		}
		for _, w := range c.Warnings {
			fmt.Fprintln(stderr, escapeLineBreaks("warning: "+path+": "+w.String()))
		}
		for _, v := range c.Violations {
			found = append(found, escapeLineBreaks(path+": "+v.String()))
			violations++
		}
	}
	// stdout is the answer of a run that could read everything; when a
	// file could not be read, the others' violations go with the errors.
	out := stdout
	if unreadable {
		out = stderr
	}
	for _, line := range found {
		fmt.Fprintln(out, line)
	}
	switch {
	case unreadable:
		return cliroot.SilentExit(2)
	case violations > 0:
		return cliroot.SilentExit(1)
	}
	fmt.Fprintf(stdout, "verified %d receipt(s)\n", len(receipts))
	return nil
}

// lineBreaks are the characters that line-oriented readers (a shell's read,
// Python's splitlines) take for the end of a line.
const lineBreaks = "\n\r\v\f\x1c\x1d\x1e\u0085\u2028\u2029"

// escapeLineBreaks writes the line breaks in s as Go escapes (`\n`), so that
// a violation, error or reason stays on its one output line whatever the
// key or value it quotes: scripts read one per line, and a receipt must not
// be able to forge a line that names another file.
func escapeLineBreaks(s string) string {
	if !strings.ContainsAny(s, lineBreaks) {
		return s
	}
	var b strings.Builder
	for s != "" {
		// Other bytes, invalid UTF-8 included, are written as they are.
		r, n := utf8.DecodeRuneInString(s)
		if strings.ContainsRune(lineBreaks, r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}
