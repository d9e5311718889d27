package receipt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/policy"
)

func TestCheck(t *testing.T) {
	pol, err := policy.Load(seedPolicyPath)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := os.ReadFile(seedReceiptPath)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		why            string
		data           string
		warnings, vios int
		unparseable    bool
	}{
		{"the seed's receipt verifies against the seed's policy", string(seed), 0, 0, false},
		{"an unknown key is a warning, not a violation", string(seed) + "extra: 1\n", 1, 0, false},
		{"a false claim is a violation", strings.Replace(string(seed), "apiVersion: ", "apiVersion: x", 1), 0, 1, false},
		{"bytes that are not a receipt are an error", "- a list\n", 0, 0, true},
	}
	for _, tt := range tests {
		c := Check("r.yaml", []byte(tt.data), pol, seedPolicyRef)
		if tt.unparseable {
			if !errors.Is(c.Err, ErrUnparseable) || c.Receipt != nil {
				t.Errorf("%s: err %v", tt.why, c.Err)
			}
			continue
		}
		if c.Err != nil || len(c.Warnings) != tt.warnings || (len(c.Violations) > 0) != (tt.vios > 0) {
			t.Errorf("%s: err %v, warnings %v, violations %v", tt.why, c.Err, c.Warnings, c.Violations)
		}
		if got := len(c.Strict()); got != len(c.Warnings)+len(c.Violations) {
			t.Errorf("%s: Strict has %d, want warnings and violations", tt.why, got)
		}
	}
	// CheckFile reads the file as Load does, and names it.
	p := filepath.Join(t.TempDir(), "r.yaml")
	if err := os.WriteFile(p, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	if c := CheckFile(p, pol, seedPolicyRef); c.Err != nil || len(c.Violations) != 0 || c.Path != p {
		t.Errorf("CheckFile: %+v", c)
	}
	if c := CheckFile(p+".missing", pol, seedPolicyRef); c.Err == nil {
		t.Error("CheckFile of a missing file: want an error")
	}
}
