package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/receipt"
)

func newReceiptsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "receipts",
		Short: "Work with reverse-reconcile receipts",
		Long: `receipts works with ReverseReconcileReceipt files, the receipts a
write-back pull request carries: "receipts table" prints their rollup
table; "backflow verify" checks them.`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "table RECEIPT...",
		Short: "Print the Markdown rollup table of receipts",
		Long: `table prints the seed's rollup table, one row per receipt in the order
given. A row states what its receipt claims; "backflow verify" checks the
claims. Each changed field shows as ` + "`valuePath: from -> to`" + `, joined by "; ".
Exit 2 when a receipt cannot be read or parsed: each such receipt is named
on stderr and no table is printed.`,
		Args: cliroot.MinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var rows []*receipt.Receipt
			unreadable := false
			for _, path := range args {
				r, warnings, err := receipt.Load(path)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "backflow: cannot read receipt: %v\n", err)
					unreadable = true
					continue
				}
				for _, w := range warnings {
					fmt.Fprintln(cmd.ErrOrStderr(), escapeLineBreaks("warning: "+path+": "+w.String()))
				}
				rows = append(rows, r)
			}
			if unreadable {
				return cliroot.SilentExit(2)
			}
			_, err := fmt.Fprint(cmd.OutOrStdout(), receipt.Table(rows))
			return err
		},
	})
	return cmd
}
