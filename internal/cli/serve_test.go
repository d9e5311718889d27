package cli

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// writeFile writes data under dir and returns the path.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestServeUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"serve"}, 2},                                  // --config is required
		{[]string{"serve", "--config", "/nonexistent.yaml"}, 2}, // unreadable config
		{[]string{"serve", "extra", "--config", "x"}, 2},        // no positional arguments
	} {
		if code, _, _ := runCLI(t, tc.args...); code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
