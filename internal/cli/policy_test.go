package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyCheck(t *testing.T) {
	t.Chdir(seedTestdata)
	code, out, _ := runCLI(t, "policy", "check", seedPolicy)
	want := seedPolicy + ": valid ReverseReconcilePolicy redis-reverse-reconcile-authority: default deny, 1 rule(s), 1 mayAccept entry (0 auto-merge), roles: platform-sre\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stdout %q, want %q", code, out, want)
	}

	dir := t.TempDir()
	bad := filepath.Join(dir, "policy.yaml")
	text := readFixture(t, seedPolicy)
	text = strings.Replace(text, "          field: spec.replicas\n", "", 1)
	text = strings.Replace(text, "default: deny", "default: allow\n  owner: sre", 1)
	if err := os.WriteFile(bad, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "policy", "check", bad)
	want = bad + `: spec.default: must be "deny" (the policy is default-deny), got "allow"` + "\n" +
		bad + ": spec.owner: unknown key\n" +
		bad + ": spec.rules[0].mayAccept[0].field: required\n"
	if code != 1 || out != want {
		t.Fatalf("invalid policy: exit %d, stdout:\n%s\nwant:\n%s", code, out, want)
	}

	for _, tc := range []struct {
		why  string
		args []string
	}{
		{"a missing file cannot be checked", []string{"policy", "check", "missing.yaml"}},
		{"a file that is not YAML cannot be checked", []string{"policy", "check", "SOURCES.md"}},
		{"exactly one policy", []string{"policy", "check"}},
	} {
		if code, _, _ := runCLI(t, tc.args...); code != 2 {
			t.Errorf("%s: exit %d, want 2", tc.why, code)
		}
	}
}

func TestPolicyExplainGolden(t *testing.T) {
	golden := goldenFile(t, "policy-explain.txt")
	t.Chdir("testdata/verify")
	const (
		seed     = "../../" + seedTestdata + "/" + seedPolicy
		extended = ".github/reverse-reconcile-policy.yaml"
		replicas = "apps/v1|StatefulSet|redis|redis-replicas"
		master   = "apps/v1|StatefulSet|redis|redis-master"
		memory   = "spec.template.spec.containers[0].resources.limits.memory"
	)
	var b strings.Builder
	for _, tc := range []struct {
		why  string
		args []string
	}{
		{"the seed's incident is allowed", []string{"--policy", seed, "--role", "platform-sre", "--environment", "prod-us-east", "--object", replicas, "--field", "spec.replicas", "--value-path", "replica.replicaCount", "--value", "4"}},
		{"two roles, every reason", []string{"--policy", seed, "--role", "developer", "--role", "platform-sre", "--environment", "staging", "--object", master, "--field", "spec.replicas", "--value-path", "replica.replicaCount"}},
		{"a field the role may not accept", []string{"--policy", seed, "--role", "platform-sre", "--environment", "prod-us-east", "--object", replicas, "--field", "spec.minReadySeconds", "--value-path", "replica.minReadySeconds"}},
		{"globs and bounds: an auto-merge entry allows", []string{"--policy", extended, "--role", "platform-sre", "--environment", "prod-eu-west", "--object", "apps/v1|StatefulSet|redis|redis-sentinel", "--field", "spec.replicas", "--value-path", "master.count", "--value", "3"}},
		{"above the maximum", []string{"--policy", extended, "--role", "platform-sre", "--environment", "prod-eu-west", "--object", master, "--field", "spec.replicas", "--value-path", "master.count", "--value", "6"}},
		{"a quoted number is a string", []string{"--policy", extended, "--role", "platform-sre", "--environment", "prod-eu-west", "--object", master, "--field", "spec.replicas", "--value-path", "master.count", "--value", `"3"`}},
		{"no value for a bounded entry", []string{"--policy", extended, "--role", "platform-sre", "--environment", "prod-us-east", "--object", master, "--field", memory, "--value-path", "master.resources.limits.memory"}},
		{"a pattern matches the whole value", []string{"--policy", extended, "--role", "platform-sre", "--environment", "prod-us-east", "--object", master, "--field", memory, "--value-path", "master.resources.limits.memory", "--value", "2Gi"}},
	} {
		code, out, errOut := runCLI(t, append([]string{"policy", "explain"}, tc.args...)...)
		if code != 0 || errOut != "" {
			t.Errorf("%s: exit %d, stderr %q", tc.why, code, errOut)
		}
		if first, _, _ := strings.Cut(out, "\n"); first != "allow" && first != "deny" {
			t.Errorf("%s: the first line must be allow or deny, got %q", tc.why, first)
		}
		b.WriteString("## " + tc.why + "\n" + out + "\n")
	}
	compareGolden(t, golden, b.String())
}

func TestPolicyExplainErrors(t *testing.T) {
	t.Chdir(seedTestdata)
	req := []string{"--role", "platform-sre", "--environment", "prod-us-east", "--object", "a|b|c|d", "--field", "f", "--value-path", "p"}
	dir := t.TempDir()
	bad := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(readFixture(t, seedPolicy), "default: deny", "default: allow", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		why  string
		args []string
		code int
	}{
		{"an invalid policy explains nothing", append([]string{"--policy", bad}, req...), 1},
		{"a missing policy", append([]string{"--policy", "missing.yaml"}, req...), 2},
		{"--role is required", []string{"--policy", seedPolicy, "--environment", "e", "--object", "o", "--field", "f", "--value-path", "p"}, 2},
		{"--value-path is required", []string{"--policy", seedPolicy, "--role", "r", "--environment", "e", "--object", "o", "--field", "f"}, 2},
		{"a malformed quoted --value", append([]string{"--policy", seedPolicy, "--value", `"\x"`}, req...), 2},
		{"no positional arguments", append([]string{"--policy", seedPolicy, "extra"}, req...), 2},
	} {
		code, out, errOut := runCLI(t, append([]string{"policy", "explain"}, tc.args...)...)
		if code != tc.code || strings.HasPrefix(out, "allow") || strings.HasPrefix(out, "deny") {
			t.Errorf("%s: exit %d (want %d), stdout %q, stderr %q", tc.why, code, tc.code, out, errOut)
		}
	}
}

func TestPolicyKeepsOneLinePerMessage(t *testing.T) {
	// why: policy check prints one error per line and explain one reason per
	// line; a line break in a key, a role or an object pattern must not split
	// them.
	t.Chdir(t.TempDir())
	const valid = "apiVersion: backflow.dev/v1alpha1\nkind: ReverseReconcilePolicy\nmetadata: {name: \"a\\nb\"}\nspec:\n  default: deny\n  rules:\n" +
		"    - role: \"sre\\nops\"\n      mayAccept:\n        - valuePath: p\n          field: f\n" +
		"          objects: [\"v1|ConfigMap|ns|a\\n- forged: reason\"]\n          environments: [prod]\n"
	if err := os.WriteFile("ok.yaml", []byte(valid), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("bad.yaml", []byte(valid+"\"x\\ny\": 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	oneLinePer := func(why, out, prefix string) {
		t.Helper()
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if !strings.HasPrefix(line, prefix) {
				t.Errorf("%s: line %q does not start with %q; stdout:\n%s", why, line, prefix, out)
			}
		}
	}
	code, out, _ := runCLI(t, "policy", "check", "ok.yaml")
	if code != 0 || strings.Count(out, "\n") != 1 {
		t.Errorf("a valid policy: exit %d, want one summary line, stdout %q", code, out)
	}
	code, out, _ = runCLI(t, "policy", "check", "bad.yaml")
	if code != 1 || !strings.Contains(out, `bad.yaml: x\ny: unknown key`) {
		t.Errorf("an invalid policy: exit %d, stdout %q", code, out)
	}
	oneLinePer("policy check", out, "bad.yaml: ")
	code, out, _ = runCLI(t, "policy", "explain", "--policy", "ok.yaml", "--role", "sre\nops", "--environment", "prod",
		"--object", "v1|ConfigMap|ns|b", "--field", "f", "--value-path", "p")
	verdict, reasons, _ := strings.Cut(out, "\n")
	if code != 0 || verdict != "deny" || reasons == "" {
		t.Fatalf("explain: exit %d, stdout %q", code, out)
	}
	oneLinePer("policy explain", reasons, "- object-not-listed: ")
}
