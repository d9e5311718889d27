package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// headCommit returns the commit checked out at repo when repo is the top of
// a git checkout (its .git directory, loose or packed refs), or "" when that
// cannot be told: the plan then says it read a working tree. Parent
// directories are not searched, so a folder inside another repository is
// never taken for a commit of that repository.
func headCommit(repo string) string {
	gitDir := filepath.Join(repo, ".git")
	if info, err := os.Lstat(gitDir); err != nil || !info.IsDir() {
		return ""
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	h := strings.TrimSpace(string(head))
	ref, isRef := strings.CutPrefix(h, "ref: ")
	if !isRef {
		if shaRE.MatchString(h) {
			return h
		}
		return ""
	}
	if !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
		return ""
	}
	if data, err := os.ReadFile(filepath.Join(gitDir, filepath.FromSlash(ref))); err == nil {
		if s := strings.TrimSpace(string(data)); shaRE.MatchString(s) {
			return s
		}
		return ""
	}
	packed, err := os.ReadFile(filepath.Join(gitDir, "packed-refs"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(packed), "\n") {
		sha, name, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && name == ref && shaRE.MatchString(sha) {
			return sha
		}
	}
	return ""
}
