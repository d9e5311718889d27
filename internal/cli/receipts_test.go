package cli

import (
	"strings"
	"testing"
)

func TestReceiptsTable(t *testing.T) {
	golden := goldenFile(t, "receipts-table.md")
	t.Chdir("testdata/verify")
	code, out, errOut := runCLI(t, "receipts", "table",
		"../../"+seedTestdata+"/"+seedReceipt,
		".backflow/receipts/redis-prod-us-east-master-resize.yaml",
		"drift/redis-staging-replica-drift.yaml")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	compareGolden(t, golden, out)
}

func TestReceiptsTableSeedRow(t *testing.T) {
	// why: the seed's row, exactly as VERIFY-RULES.md gives it.
	t.Chdir(seedTestdata)
	_, out, _ := runCLI(t, "receipts", "table", seedReceipt)
	want := "| Receipt | Chart | Env | Accepted change | Authority | Bounded | Round-trip | Status |\n" +
		"| --- | --- | --- | --- | --- | --- | --- | --- |\n" +
		"| `redis-prod-us-east-replica-incident` | bitnami/redis@25.5.3 | prod-us-east | `replica.replicaCount: 3 -> 4` | allow | yes | closed | design-example |\n"
	if out != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out, want)
	}
}

func TestReceiptsTableErrors(t *testing.T) {
	t.Chdir(seedTestdata)
	code, out, errOut := runCLI(t, "receipts", "table", "missing.yaml", seedReceipt)
	if code != 2 || !strings.Contains(errOut, "missing.yaml") || out != "" {
		t.Errorf("an unreadable receipt: exit %d, stdout %q, stderr %q; want exit 2 and no table", code, out, errOut)
	}
	for _, args := range [][]string{
		{"receipts", "table"}, // why: at least one receipt
		{"receipts", "tabel"}, // why: an unknown subcommand
	} {
		if code, _, _ := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
