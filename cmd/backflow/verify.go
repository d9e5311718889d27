package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/receipt"
)

func newVerifyCmd() *cobra.Command {
	var policyPath string
	cmd := &cobra.Command{
		Use:   "verify --policy POLICY RECEIPT...",
		Short: "Verify reverse-reconcile receipts against the authority policy",
		Long: `verify checks every property of each ReverseReconcileReceipt: the seed's
verifier rules and backflow's additions. POLICY's path as given (cleaned,
/-separated, relative to the working directory) is the policyRef every receipt
must name. A receipt passes only as an authorized write-back.

All pass: exit 0 and "verified N receipt(s)". Otherwise exit 1 and one line per
violation, "<file>: <property>: <message>", for the policy and the receipts.
Exit 2 when a file cannot be read or parsed, after checking the others.
Unknown keys in a receipt are warnings on stderr.`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(cmd.OutOrStdout(), cmd.ErrOrStderr(), policyPath, args)
		},
	}
	cmd.Flags().StringVar(&policyPath, "policy", "", "the ReverseReconcilePolicy file (required)")
	_ = cmd.MarkFlagRequired("policy")
	return cmd
}

func runVerify(stdout, stderr io.Writer, policyPath string, receipts []string) error {
	wd, err := os.Getwd()
	if err != nil {
		return usageError("cannot determine the working directory: %v", err)
	}
	ref, err := receipt.PolicyRef(policyPath, wd)
	if err != nil {
		return usageError("%v", err)
	}
	unreadable, violations := false, 0
	pol, err := policy.Load(policyPath)
	var verr *policy.ValidationError
	switch {
	case errors.As(err, &verr):
		// Rule 1 (and every other invalid place): reported like a receipt's
		// violations. The invalid policy authorizes nothing, so the receipts
		// are still checked and their fields reported as unauthorized.
		for _, fe := range verr.Errors {
			fmt.Fprintln(stdout, escapeLineBreaks(policyPath+": "+fe.Error()))
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
			fmt.Fprintln(stdout, escapeLineBreaks(path+": "+v.String()))
			violations++
		}
	}
	switch {
	case unreadable:
		return silentExit(2)
	case violations > 0:
		return silentExit(1)
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
