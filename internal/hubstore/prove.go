package hubstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/values"
)

// ErrNotYet marks a receipt that cannot be proven yet: its revision is not
// applied, or the live object does not hold the new value. Look again on
// a later cycle.
var ErrNotYet = errors.New("not proven yet")

// Live reads the live value of an object's field (the follow-up's
// re-observation); ok is false when it was not observed.
type Live func(object, field string) (v any, ok bool)

// Proof is what proving a receipt needs besides the store.
type Proof struct {
	// Receipt is the proposed receipt's bytes, as the pull request
	// committed them (their digest is in the revision's description).
	Receipt []byte
	// Path names the receipt in errors.
	Path string
	// MergeCommit is the pull request's merge commit.
	MergeCommit string
	// Live reads the re-observed object.
	Live Live
	// Policy and PolicyPath verify the proven receipt.
	Policy     *policy.Policy
	PolicyPath string
}

// Prove makes the proven receipt of a confighub-revision write-back: the
// revision it names exists and was written with its digest, ConfigHub has
// applied it (the Unit's LastReleasedRevisionNum reached it), and the live
// object holds every accepted value. The result verifies against the
// policy; anything short is ErrNotYet or an error, and nothing is proven.
func (s *Store) Prove(ctx context.Context, pf Proof) ([]byte, error) {
	r, _, err := receipt.Parse(pf.Path, pf.Receipt)
	if err != nil {
		return nil, fmt.Errorf("error reading receipt %s: %w", pf.Path, err)
	}
	wb := r.Spec.WriteBack
	space, unit, num, ok := receipt.ParseConfigHubRevision(wb.NewRevision)
	if wb.Method != receipt.MethodConfigHubRevision || !ok {
		return nil, fmt.Errorf("receipt %s is not a ConfigHub revision's (method %q, newRevision %q)",
			pf.Path, wb.Method, wb.NewRevision)
	}
	ref, err := s.Client.Resolve(ctx, space, unit)
	if err != nil {
		return nil, err
	}
	rev, err := s.Client.Revision(ctx, ref, num)
	if err != nil {
		return nil, err
	}
	digest := Digest(pf.Receipt)
	if !strings.Contains(rev.Description, digest) {
		return nil, fmt.Errorf("receipt %s: revision %d of ConfigHub unit %s/%s was not written for it "+
			"(its description names no %s)",
			pf.Path, num, space, unit, digest)
	}
	u, err := s.Client.GetUnit(ctx, ref)
	if err != nil {
		return nil, err
	}
	if u.LastReleasedRevisionNum < num {
		return nil, fmt.Errorf("receipt %s: %w: ConfigHub unit %s/%s has applied revision %d, not yet %d",
			pf.Path, ErrNotYet, space, unit, u.LastReleasedRevisionNum, num)
	}
	var seen []string
	for _, cf := range r.Spec.Bounds.ChangedFields {
		v, ok := pf.Live(cf.Object, cf.Field)
		if !ok {
			return nil, fmt.Errorf("receipt %s: %w: %s %s was not re-observed", pf.Path, ErrNotYet, cf.Object, cf.Field)
		}
		if !values.Equal(v, cf.To.V) {
			return nil, fmt.Errorf("receipt %s: %w: %s %s is live %s, not %s", pf.Path, ErrNotYet, cf.Object,
				cf.Field, values.Format(v), values.Format(cf.To.V))
		}
		seen = append(seen, fmt.Sprintf("%s %s is live %s", cf.Object, cf.Field, values.Format(v)))
	}
	r.Spec.Status = receipt.StatusProven
	r.Spec.WriteBack.MergeCommit = pf.MergeCommit
	notClaimed := []string{fmt.Sprintf("Proven by re-observation: revision %d of ConfigHub unit %s/%s, "+
		"written for this receipt (%s) after the merge %s, was applied (the Unit's last applied revision is %d), "+
		"and %s. Live changes made after that observation are not claimed.",
		num, space, unit, digest, pf.MergeCommit, u.LastReleasedRevisionNum, strings.Join(seen, "; "))}
	for _, n := range r.Spec.NotClaimed {
		if !strings.HasPrefix(n, "Proposed, not proven") {
			notClaimed = append(notClaimed, n)
		}
	}
	r.Spec.NotClaimed = notClaimed
	if vs := receipt.Verify(r, pf.Policy, pf.PolicyPath); len(vs) > 0 {
		return nil, fmt.Errorf("the proven receipt %s fails verification against %s: %s", pf.Path,
			pf.PolicyPath, receipt.JoinViolations(vs))
	}
	return receipt.Marshal(r)
}
