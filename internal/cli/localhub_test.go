package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestLocalhubUsageErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no dir", []string{"localhub", "--listen", "127.0.0.1:0"}, "--listen and --dir are required"},                                                      // why: the state folder is required
		{"bad repo flag", []string{"localhub", "--listen", "127.0.0.1:0", "--dir", dir, "--repo", "acme=" + dir}, "want OWNER/NAME=FOLDER"},                 // why: OWNER/NAME is required
		{"missing folder", []string{"localhub", "--listen", "127.0.0.1:0", "--dir", dir, "--repo", "acme/x=" + filepath.Join(dir, "nope")}, "no such file"}, // why: the folder must exist
		{"bad listen", []string{"localhub", "--listen", "not-an-address", "--dir", dir}, "listening on"},                                                    // why: a bad address cannot serve
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}
