package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	seedTestdata = "../../testdata/seed"
	seedPolicy   = "data/reverse-reconcile/authority-policy.yaml"
	seedReceipt  = "data/reverse-reconcile/examples/redis-prod-us-east-replica-incident.yaml"
)

func readFixture(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// seedRepoWithEdits copies the seed's policy and receipt into a temporary directory
// at the seed's paths, applies the edits (old, new pairs) to the receipt,
// and makes the directory the working directory.
func seedRepoWithEdits(t *testing.T, policyText string, receiptEdits ...string) {
	t.Helper()
	seedPolicyText := readFixture(t, filepath.Join(seedTestdata, seedPolicy))
	receiptText := readFixture(t, filepath.Join(seedTestdata, seedReceipt))
	if policyText == "" {
		policyText = seedPolicyText
	}
	for i := 0; i+1 < len(receiptEdits); i += 2 {
		if !strings.Contains(receiptText, receiptEdits[i]) {
			t.Fatalf("edit: %q not in the seed receipt", receiptEdits[i])
		}
		receiptText = strings.Replace(receiptText, receiptEdits[i], receiptEdits[i+1], 1)
	}
	dir := t.TempDir()
	for path, text := range map[string]string{seedPolicy: policyText, seedReceipt: receiptText} {
		full := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
}

func TestVerifySeed(t *testing.T) {
	t.Chdir(seedTestdata)
	for _, tc := range []struct {
		why    string
		policy string
	}{
		{"the seed's receipt passes against the seed's policy at its policyRef", seedPolicy},
		{"the policy path is cleaned before it is compared", "./data//reverse-reconcile/authority-policy.yaml"},
	} {
		code, out, errOut := runCLI(t, "verify", "--policy", tc.policy, seedReceipt)
		if code != 0 || out != "verified 1 receipt(s)\n" || errOut != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", tc.why, code, out, errOut)
		}
	}
	// why: an absolute path counts relative to the working directory.
	wd, _ := os.Getwd()
	if code, out, _ := runCLI(t, "verify", "--policy", filepath.Join(wd, seedPolicy), seedReceipt, seedReceipt); code != 0 || out != "verified 2 receipt(s)\n" {
		t.Errorf("absolute policy path: exit %d, stdout %q", code, out)
	}
}

func TestVerifyPolicyRefIsRelativeToTheWorkingDirectory(t *testing.T) {
	// why: from another directory the same file has another path, which the
	// receipt does not name.
	t.Chdir(filepath.Join(seedTestdata, "data"))
	code, out, _ := runCLI(t, "verify", "--policy", "reverse-reconcile/authority-policy.yaml", "reverse-reconcile/examples/redis-prod-us-east-replica-incident.yaml")
	want := `reverse-reconcile/examples/redis-prod-us-east-replica-incident.yaml: authority.policyRef: is "data/reverse-reconcile/authority-policy.yaml", want the policy's path "reverse-reconcile/authority-policy.yaml"` + "\n"
	if code != 1 || out != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s", code, out, want)
	}
}

func TestVerifyReportsViolations(t *testing.T) {
	seedRepoWithEdits(t, "", "environment: prod-us-east", "environment: staging", "result: closed", "result: open")
	code, out, errOut := runCLI(t, "verify", "--policy", seedPolicy, seedReceipt)
	want := []string{
		seedReceipt + `: bounds.changedFields[0]: apps/v1|StatefulSet|redis|redis-replicas spec.replicas is not authorized for role "platform-sre" in "staging": spec.rules[0].mayAccept[0] (role platform-sre): environment "staging" is not listed in environments [prod-us-east, prod-eu-west]`,
		seedReceipt + `: bounds.unauthorizedFieldsChanged: is [], want ["apps/v1|StatefulSet|redis|redis-replicas spec.replicas"]`,
		seedReceipt + `: bounds.withinAuthorizedScope: must be false: a changed field is not authorized`,
		seedReceipt + `: authority.decision: must be deny: a changed field is not authorized`,
		seedReceipt + `: trigger.class: must be unauthorized-drift: a changed field is not authorized`,
		seedReceipt + `: roundTrip.result: must be closed, got "open"`,
	}
	if code != 1 || out != strings.Join(want, "\n")+"\n" || errOut != "" {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, errOut, out, strings.Join(want, "\n"))
	}
}

func TestVerifyPolicyBreakingRuleOne(t *testing.T) {
	// why: a policy that is not default-deny is reported like a receipt's
	// violation, and authorizes nothing, so the receipt fails too.
	seed := readFixture(t, filepath.Join(seedTestdata, seedPolicy))
	seedRepoWithEdits(t, strings.Replace(strings.Replace(seed, "default: deny", "default: allow", 1), "kind: ReverseReconcilePolicy", "kind: Policy", 1))
	code, out, _ := runCLI(t, "verify", "--policy", seedPolicy, seedReceipt)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 1 || len(lines) < 3 ||
		lines[0] != seedPolicy+`: kind: must be ReverseReconcilePolicy, got "Policy"` ||
		lines[1] != seedPolicy+`: spec.default: must be "deny" (the policy is default-deny), got "allow"` ||
		!strings.HasPrefix(lines[2], seedReceipt+": bounds.changedFields[0]: ") || !strings.Contains(lines[2], "invalid") {
		t.Fatalf("exit %d, stdout:\n%s", code, out)
	}
}

func TestVerifyUnreadableFiles(t *testing.T) {
	seedRepoWithEdits(t, "", "result: closed", "result: open")
	for _, tc := range []struct {
		why        string
		args       []string
		wantOut    string
		wantStderr string
	}{
		{"a missing receipt is exit 2, after checking the others",
			[]string{"verify", "--policy", seedPolicy, "missing.yaml", seedReceipt},
			seedReceipt + ": roundTrip.result: must be closed, got \"open\"\n", "missing.yaml"},
		{"a receipt that is not YAML is exit 2",
			[]string{"verify", "--policy", seedPolicy, seedPolicy + "x"},
			"", seedPolicy + "x"},
		{"a missing policy is exit 2 (rule 1: it exists)",
			[]string{"verify", "--policy", "nope.yaml", seedReceipt},
			"", "cannot read policy"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			// Exit 2 leaves stdout empty; the others' violations go to stderr.
			if code != 2 || !strings.Contains(errOut, tc.wantStderr) || (tc.wantOut != "" && !strings.Contains(errOut, tc.wantOut)) || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
	if err := os.WriteFile("broken.yaml", []byte("spec: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "verify", "--policy", seedPolicy, "broken.yaml"); code != 2 || !strings.Contains(errOut, "broken.yaml") {
		t.Errorf("an unparseable receipt: exit %d, stderr %q", code, errOut)
	}
}

func TestVerifyWarnsOnUnknownKeys(t *testing.T) {
	seedRepoWithEdits(t, "", "  chart: bitnami/redis\n", "  chart: bitnami/redis\n  cluster: us-east-1\n")
	code, out, errOut := runCLI(t, "verify", "--policy", seedPolicy, seedReceipt)
	if code != 0 || out != "verified 1 receipt(s)\n" || errOut != "warning: "+seedReceipt+": cluster: unknown key, ignored\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestVerifyExtendedPolicy(t *testing.T) {
	t.Chdir("testdata/verify")
	code, out, _ := runCLI(t, "verify", "--policy", ".github/reverse-reconcile-policy.yaml", ".backflow/receipts/redis-prod-us-east-master-resize.yaml")
	if code != 0 || out != "verified 1 receipt(s)\n" {
		t.Fatalf("a two-field receipt within the policy's bounds: exit %d, stdout %q", code, out)
	}
	code, out, _ = runCLI(t, "verify", "--policy", ".github/reverse-reconcile-policy.yaml", "drift/redis-staging-replica-drift.yaml")
	if code != 1 || !strings.Contains(out, "drift/redis-staging-replica-drift.yaml: authority.decision: is deny: unauthorized drift is reported, never receipted as a write-back\n") {
		t.Fatalf("a self-consistent drift receipt must fail: exit %d, stdout %q", code, out)
	}
}

func TestVerifyUsage(t *testing.T) {
	t.Chdir(seedTestdata)
	for _, args := range [][]string{
		{"verify", seedReceipt},                     // why: --policy is required
		{"verify", "--policy", seedPolicy},          // why: at least one receipt
		{"verify", "--bogus", "--policy", "x", "y"}, // why: an unknown flag
	} {
		if code, _, _ := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestVerifyKeepsOneLinePerViolation(t *testing.T) {
	// why: scripts read one violation per line, each starting with its file; a
	// line break in a receipt's value or key must neither split a violation
	// nor forge a line that names another file.
	seedRepoWithEdits(t, "",
		`      - object: "apps/v1|StatefulSet|redis|redis-replicas"`,
		`      - object: "apps/v1|StatefulSet|redis|redis-replicas\nother.yaml: kind: forged"`,
		"  status: design-example\n", "  status: design-example\n  \"odd\\r\\nkey\\u2028\": 1\n")
	code, out, errOut := runCLI(t, "verify", "--policy", seedPolicy, seedReceipt)
	if code != 1 || out == "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !strings.HasPrefix(line, seedReceipt+": ") || strings.ContainsAny(line, "\r\u2028") {
			t.Errorf("stdout line %q is not one whole violation of %s", line, seedReceipt)
		}
	}
	if !strings.Contains(out, `redis-replicas\nother.yaml: kind: forged spec.replicas is not authorized`) {
		t.Errorf("the line break should show escaped, stdout:\n%s", out)
	}
	if want := "warning: " + seedReceipt + `: odd\r\nkey\u2028: unknown key, ignored` + "\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}
