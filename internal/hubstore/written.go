package hubstore

import (
	"context"
	"strings"

	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// WrittenFor finds the revision of a Unit written for a receipt: the
// newest whose change description names the receipt's digest (Write puts
// it there). ok is false when none does. Asking ConfigHub rather than
// remembering keeps a write once across restarts and processes.
func (s *Store) WrittenFor(ctx context.Context, r repoconfig.StoreRef, receiptBytes []byte) (num int64, ok bool,
	err error) {
	ref, _, err := s.resolve(ctx, r)
	if err != nil {
		return 0, false, err
	}
	revs, err := s.Client.Revisions(ctx, ref)
	if err != nil {
		return 0, false, err
	}
	digest := Digest(receiptBytes)
	for _, r := range revs {
		if strings.Contains(r.Description, digest) && r.Num > num {
			num, ok = r.Num, true
		}
	}
	return num, ok, nil
}
