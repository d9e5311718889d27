package repoconfig

import (
	"strings"
	"testing"
)

func TestReceiptsFolderOwnsNothingElse(t *testing.T) {
	cases := []struct {
		why, dir, want string
	}{
		{"a folder of its own is fine", "audit/receipts", ""},
		{"the workflows folder runs what is written there", ".github/workflows", "workflows folder"},
		{"a folder under the workflows", ".github/workflows/receipts", "workflows folder"},
		{".github holds the repo config", ".github", "holds the repo config"},
		{"the policy's folder holds the policy", ".github", "holds"},
		{"docs holds a CODEOWNERS", "docs", "CODEOWNERS"},
		{"a values file is not a folder", "envs/prod/values.yaml", "values file"},
		{"a folder holding a values file", "envs", "values file"},
		{"case does not slip past", ".GitHub/Workflows", "workflows folder"},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			_, err := Parse(Path, []byte(base+"receipts:\n  dir: "+tc.dir+"\n"))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "receipts.dir") || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want receipts.dir and %q", err, tc.want)
			}
		})
	}
}

func TestReceiptWritable(t *testing.T) {
	c, err := Parse(Path, []byte(strings.Replace(base, "policy: .github/policy.yaml", "policy: .backflow/receipts/prod/policy.yaml", 1)))
	if err == nil {
		t.Fatal("a policy inside the receipts folder was accepted")
	}
	c, err = Parse(Path, []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ why, path, want string }{
		{"a receipt in its folder", ".backflow/receipts/prod/redis/x.yaml", ""},
		{"outside the folder", "receipts/x.yaml", "outside receipts.dir"},
		{"climbing out", ".backflow/receipts/../../.github/policy.yaml", "no .."},
		{"the same folder's prefix is not the folder", ".backflow/receipts-evil/x.yaml", "outside receipts.dir"},
	} {
		err := c.ReceiptWritable(tc.path)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %s: err = %v, want %q", tc.why, tc.path, err, tc.want)
		}
	}
}
