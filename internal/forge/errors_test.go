package forge

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRateLimitErrorIsFoundThroughWrapping(t *testing.T) {
	until := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	err := fmt.Errorf("error listing pull requests of acme/gitops: %w", &RateLimitError{Until: until, Reason: "429"})
	rl, ok := IsRateLimited(err)
	// Why: the cycle stops on a rate limit wherever it was wrapped, and
	// needs the time to resume.
	if !ok || !rl.Until.Equal(until) {
		t.Fatalf("IsRateLimited = %v, %v", rl, ok)
	}
	if !strings.Contains(err.Error(), "rate limited (429) until 2026-01-01T12:00:00Z") {
		t.Fatalf("message %q", err)
	}
	if _, ok := IsRateLimited(fmt.Errorf("x: %w", ErrConflict)); ok {
		t.Fatal("a conflict is not a rate limit")
	}
	if errors.Is(ErrConflict, ErrNotFound) || errors.Is(ErrAlreadyMergeable, ErrNotMergeable) {
		t.Fatal("sentinels must be distinct: callers branch on them")
	}
}

func TestRepoNames(t *testing.T) {
	r := Repo{Owner: "acme", Name: "gitops", DefaultBranch: "main"}
	// Why: messages and allowlists use owner/name.
	if r.FullName() != "acme/gitops" || fmt.Sprint(r) != "acme/gitops" {
		t.Fatalf("FullName %q String %q", r.FullName(), fmt.Sprint(r))
	}
}
