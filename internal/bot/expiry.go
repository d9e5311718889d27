package bot

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"

	"github.com/backflow-dev/backflow/internal/plan"
)

// ExpiryReport is one temporary acceptance (break glass) as reported.
type ExpiryReport struct {
	// Receipt is the accepting receipt's path on the default branch.
	Receipt     string            `json:"receipt"`
	Environment string            `json:"environment"`
	Unit        string            `json:"unit"`
	Object      observe.ObjectKey `json:"object"`
	// ExpiresAt is an RFC 3339 time, empty when the receipt's is not one.
	ExpiresAt string `json:"expiresAt,omitempty"`
	// State is in-force, due, waiting, void or refused; WriteBack the
	// restoring write-back's branch when one is proposed.
	State     string `json:"state"`
	WriteBack string `json:"writeBack,omitempty"`
	Why       string `json:"why"`
}

func expiryReports(xs []plan.Expiry) []ExpiryReport {
	var out []ExpiryReport
	for _, x := range xs {
		r := ExpiryReport{
			Receipt:     x.Receipt,
			Environment: x.Environment,
			Unit:        x.Unit,
			Object:      x.Object,
			State:       string(x.State),
			WriteBack:   x.WriteBack,
			Why:         x.Why,
		}
		if !x.ExpiresAt.IsZero() {
			r.ExpiresAt = x.ExpiresAt.UTC().Format(time.RFC3339)
		}
		out = append(out, r)
	}
	return out
}

// listEntry is one folder's listing, or the forge's not-found for it.
type listEntry struct {
	files []string
	err   error
}

// listFiles lists dir at sha once per commit, as readFile reads a file
// once: the receipts folder is listed every cycle for the expiries due,
// and a cycle at an unchanged head must cost no request for it. A folder
// that is not there is a not-found error that is also fs.ErrNotExist, as
// a checkout's listing says it, so the snapshot reader sees no receipts
// rather than a failure.
func (b *Bot) listFiles(ctx context.Context, repo forge.Repo, sha, dir string) ([]string, error) {
	b.mu.Lock()
	fc := b.cacheAt(repo, sha)
	got, ok := fc.lists[dir]
	b.mu.Unlock()
	if ok {
		return got.files, got.err
	}
	files, err := b.opts.Forge.ListFiles(ctx, repo, sha, dir)
	if errors.Is(err, forge.ErrNotFound) {
		err = notThere{err}
	}
	if err != nil && !errors.Is(err, forge.ErrNotFound) {
		return nil, err
	}
	b.mu.Lock()
	if fc.lists == nil {
		fc.lists = map[string]listEntry{}
	}
	fc.lists[dir] = listEntry{files, err}
	b.mu.Unlock()
	return files, err
}

// notThere is the forge's not-found for a folder, which is also
// fs.ErrNotExist; its message is the forge's.
type notThere struct{ err error }

func (e notThere) Error() string   { return e.err.Error() }
func (e notThere) Unwrap() []error { return []error{e.err, fs.ErrNotExist} }

// cacheAt is the repository's cache of what was read at sha, a new one
// when the head moved; b.mu must be held.
func (b *Bot) cacheAt(repo forge.Repo, sha string) *fileCache {
	fc := b.files[repo.FullName()]
	if fc == nil || fc.sha != sha {
		fc = &fileCache{sha: sha, files: map[string]fileEntry{}}
		b.files[repo.FullName()] = fc
	}
	return fc
}
