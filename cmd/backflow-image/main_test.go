package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing to write", []string{"--binary", "linux/amd64=x"}, "nothing to write"},
		{"bad pair", []string{"--binary", "linux/amd64", "--layout", dir}, "want PLATFORM=FILE"},
		{"twice", []string{"--binary", "linux/amd64=a", "--binary", "linux/amd64=b", "--layout", dir}, "given twice"},
		{"tarball without binary", []string{"--binary", "linux/amd64=a", "--tarball", "linux/arm64=x.tar", "--version", "v1.0.0", "--revision", "abc"}, "no --binary for that platform"},
		{"missing binary", []string{"--binary", "linux/amd64=/nonexistent/backflow", "--core", "linux/amd64=/nonexistent/backflow-core", "--layout", filepath.Join(dir, "l"), "--version", "v1.0.0", "--revision", "abc"}, "/nonexistent/backflow"},
		{"no core", []string{"--binary", "linux/amd64=/nonexistent/backflow", "--layout", filepath.Join(dir, "l"), "--version", "v1.0.0", "--revision", "abc"}, "linux/amd64: no backflow-core binary"},
		{"core twice", []string{"--core", "linux/amd64=a", "--core", "linux/amd64=b", "--layout", dir}, "given twice"},
		{"bad time", []string{"--binary", "linux/amd64=a", "--layout", dir, "--created", "yesterday"}, "--created"},
		{"argument", []string{"--layout", dir, "extra"}, "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
				t.Errorf("exit %d, stderr %q, stdout %q; want 2 and %q", code, stderr.String(), stdout.String(), tc.want)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused run wrote %v", entries)
	}
}

func TestParseCreated(t *testing.T) {
	for _, tc := range []struct{ flag, epoch, want string }{
		{"1764555600", "", "2025-12-01T02:20:00Z"},
		{"", "1764555600", "2025-12-01T02:20:00Z"},
		{"2026-12-01T02:20:00+01:00", "1", "2026-12-01T01:20:00Z"},
	} {
		got, err := parseCreated(tc.flag, tc.epoch)
		if err != nil || got.Format(time.RFC3339) != tc.want {
			t.Errorf("parseCreated(%q, %q) = %v, %v; want %s", tc.flag, tc.epoch, got, err, tc.want)
		}
	}
}
