package cli

import (
	"fmt"
	"io"

	"github.com/backflow-dev/backflow/internal/checkout"
	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/diffbound"
)

// runVerifyDiff checks a pull request's whole diff in the git checkout at
// dir: the changes from the merge base of baseRef and headRef to headRef,
// against the repo config and policy at baseRef.
func runVerifyDiff(stdout io.Writer, dir, baseRef, headRef, configPath string) error {
	d, err := checkout.ReadDiff(dir, baseRef, headRef, configPath)
	if d != nil && d.PolicyErr != nil {
		fmt.Fprintln(stdout, escapeLineBreaks(d.PolicyErr.Error()))
	}
	if err != nil {
		return cliroot.UsageError("%v", err)
	}
	if !d.ClaimsAny() && len(d.Special) == 0 {
		fmt.Fprintf(
			stdout,
			"no receipt is added or changed: the pull request claims no authority, "+
				"so it is reviewed as any other (%d file(s) changed)\n",
			d.Files,
		)
		return nil
	}
	res := diffbound.Check(d.Input)
	violations := append(d.Special, res.Violations...)
	if d.Input.Policy == nil {
		violations = append(violations, d.Input.Config.Policy+": the base branch's policy is invalid: it authorizes nothing")
	}
	for _, v := range violations {
		fmt.Fprintln(stdout, escapeLineBreaks(v))
	}
	if len(violations) > 0 {
		return cliroot.SilentExit(1)
	}
	fmt.Fprintf(
		stdout,
		"the whole diff is within its receipts: %d receipt(s), %d changed value path(s), %d file(s)\n",
		res.Receipts,
		res.ValuePaths,
		d.Files,
	)
	return nil
}
