package bot

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
)

// sameFiles reports whether every path a write-back commits reads the same
// at head as at the cycle's planned head (both absent counts as the same).
func (rc *repoCycle) sameFiles(head string, files map[string][]byte) (bool, error) {
	f := rc.b.opts.Forge
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		var got [2][]byte
		var missing [2]bool
		for i, sha := range []string{rc.head, head} {
			data, err := f.ReadFile(rc.ctx, rc.repo, sha, p)
			switch {
			case errors.Is(err, forge.ErrNotFound):
				missing[i] = true
			case err != nil:
				return false, fmt.Errorf("error reading %s at %s: %w", p, lifecycle.Short(sha), err)
			}
			got[i] = data
		}
		if missing[0] != missing[1] || !bytes.Equal(got[0], got[1]) {
			return false, nil
		}
	}
	return true, nil
}
