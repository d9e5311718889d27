package forgetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
)

// stub answers the few calls the test makes; any other call panics on the
// nil interface it embeds.
type stub struct {
	forge.Forge
	calls []string
}

func (s *stub) BranchHead(ctx context.Context, repo forge.Repo, branch string) (string, error) {
	s.calls = append(s.calls, "BranchHead")
	return "abc", nil
}

func (s *stub) AddLabels(ctx context.Context, repo forge.Repo, number int, labels ...string) error {
	s.calls = append(s.calls, "AddLabels")
	if number == 404 {
		return forge.ErrNotFound
	}
	return nil
}

func (s *stub) Commit(ctx context.Context, req forge.CommitRequest) (string, error) {
	s.calls = append(s.calls, "Commit")
	return "c1", nil
}

func TestRecorder(t *testing.T) {
	ctx := context.Background()
	s := &stub{}
	r := NewRecorder(s)
	repo := forge.Repo{Owner: "acme", Name: "gitops", DefaultBranch: "main"}
	if head, err := r.BranchHead(ctx, repo, "main"); err != nil || head != "abc" {
		t.Fatalf("a read is the forge's answer: %q %v", head, err)
	}
	if _, err := r.Commit(ctx, forge.CommitRequest{Repo: repo, Branch: "b", Files: map[string][]byte{"z": nil, "a": nil}}); err != nil {
		t.Fatal(err)
	}
	if err := r.AddLabels(ctx, repo, 1, "x", "env:prod", "x"); err != nil {
		t.Fatal(err)
	}
	if err := r.AddLabels(ctx, repo, 404, "y"); !errors.Is(err, forge.ErrNotFound) {
		t.Fatalf("the forge's error is returned as it is: %v", err)
	}
	boom := errors.New("boom")
	r.Fail("Commit", boom)
	if _, err := r.Commit(ctx, forge.CommitRequest{Repo: repo, Branch: "b"}); !errors.Is(err, boom) {
		t.Fatalf("the scripted failure: %v", err)
	}
	want := []string{"acme/gitops:commit:b:a,z", "acme/gitops#1:label:env:prod", "acme/gitops#1:label:x"}
	if got := r.Effects(); !slices.Equal(got, want) {
		t.Errorf("effects %v, want %v (failed writes are not effects)", got, want)
	}
	if want := []string{"BranchHead", "Commit", "AddLabels", "AddLabels"}; !slices.Equal(s.calls, want) {
		t.Errorf("calls reaching the forge %v, want %v (a scripted failure does not reach it)", s.calls, want)
	}
	if reads, writes := r.Counts(); reads != 1 || writes != 4 {
		t.Errorf("counts %d reads, %d writes", reads, writes)
	}
	r.Reset()
	if len(r.Effects()) != 0 {
		t.Error("Reset kept effects")
	}
}
