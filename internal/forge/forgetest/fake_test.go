package forgetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/backflow-dev/backflow/internal/forge"
)

func newFakeHarness(t *testing.T) Harness {
	f := New(forge.App{ID: 1, Slug: "backflow"}, nil)
	repo := f.AddRepo("acme/gitops", ContractFiles)
	return Harness{
		Forge: f,
		Repo:  repo,
		Person: func(t *testing.T, branch string, files map[string]string) string {
			return f.Push("acme/gitops", branch, forge.Author{Name: "Alice", Email: "alice@example.com"}, "hand edit\n", files)
		},
		RequireChecks: func(t *testing.T, checks ...string) { f.SetRequiredChecks("acme/gitops", "main", checks...) },
	}
}

func TestFakeContract(t *testing.T) {
	RunContract(t, newFakeHarness)
}

func TestFakeRecordsEffects(t *testing.T) {
	ctx := context.Background()
	f := New(forge.App{ID: 1, Slug: "backflow"}, nil)
	repo := f.AddRepo("acme/gitops", ContractFiles)
	main, err := f.BranchHead(ctx, repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	author := forge.Author{Name: "backflow[bot]", Email: "1+backflow[bot]@users.noreply.github.com"}
	if _, err := f.Commit(ctx, forge.CommitRequest{Repo: repo, Branch: "backflow/prod/redis", BaseSHA: main, Author: author, Message: "m\n",
		Files: map[string][]byte{"envs/prod/redis/values.yaml": []byte("replicas: 4\n"), ".backflow/receipts/a.yaml": []byte("x\n")}}); err != nil {
		t.Fatal(err)
	}
	pr, err := f.CreatePullRequest(ctx, repo, forge.NewPullRequest{Title: "t", Head: "backflow/prod/redis", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddLabels(ctx, repo, pr.Number, "reverse-reconcile", "reverse-reconcile"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateCheckRun(ctx, repo, forge.CheckRun{Name: "backflow/receipt", HeadSHA: pr.HeadSHA, Conclusion: forge.ConclusionSuccess}); err != nil {
		t.Fatal(err)
	}
	if err := f.EnableAutoMerge(ctx, repo, pr, pr.HeadSHA, forge.MergeSquash); !errors.Is(err, forge.ErrAlreadyMergeable) {
		t.Fatalf("EnableAutoMerge on a clean pull request: %v", err)
	}
	if _, err := f.Merge(ctx, repo, pr.Number, pr.HeadSHA, forge.MergeSquash); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"acme/gitops:commit:backflow/prod/redis:.backflow/receipts/a.yaml,envs/prod/redis/values.yaml",
		"acme/gitops#1:open:backflow/prod/redis",
		"acme/gitops#1:label:reverse-reconcile",
		"acme/gitops:check:backflow/receipt:success",
		"acme/gitops#1:merge:squash",
	}
	if diff := cmp.Diff(want, f.Effects()); diff != "" {
		t.Fatalf("effects (-want +got):\n%s", diff)
	}
	if reads, writes := f.Counts(); reads != 1 || writes != 6 {
		t.Fatalf("Counts = %d reads, %d writes; want 1 and 6 (the refused auto-merge counts)", reads, writes)
	}
}

func TestFakeInjectedFailure(t *testing.T) {
	ctx := context.Background()
	f := New(forge.App{ID: 1, Slug: "backflow"}, nil)
	repo := f.AddRepo("acme/gitops", ContractFiles)
	boom := fmt.Errorf("injected: %w", forge.ErrUnavailable)
	f.Fail("AddLabels", boom)
	// Why: the cycle must see the injected error once, then normal service.
	if err := f.AddLabels(ctx, repo, 1, "x"); !errors.Is(err, forge.ErrUnavailable) {
		t.Fatalf("first AddLabels = %v, want the injected error", err)
	}
	if err := f.AddLabels(ctx, repo, 1, "x"); !errors.Is(err, forge.ErrNotFound) {
		t.Fatalf("second AddLabels = %v, want ErrNotFound (no issue #1)", err)
	}
	if len(f.Effects()) != 0 {
		t.Fatalf("effects after failures = %v, want none", f.Effects())
	}
}

func TestFakePersonCommitIsNotAnEffect(t *testing.T) {
	f := New(forge.App{ID: 1, Slug: "backflow"}, nil)
	f.AddRepo("acme/gitops", ContractFiles)
	// Why: set-up done on behalf of people must not look like the bot's work.
	sha := f.Push("acme/gitops", "topic", forge.Author{Name: "Alice", Email: "a@example.com"}, "edit\n", map[string]string{"README.md": "x\n"})
	if got := f.Branches("acme/gitops")["topic"]; got != sha {
		t.Fatalf("topic = %s, want %s", got, sha)
	}
	if content, _ := f.File("acme/gitops", "topic", "README.md"); content != "x\n" {
		t.Fatalf("README.md on topic = %q", content)
	}
	if len(f.Effects()) != 0 {
		t.Fatalf("effects = %v, want none", f.Effects())
	}
}
