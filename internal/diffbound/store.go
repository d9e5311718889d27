package diffbound

import (
	"fmt"

	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// writesStore says why cf of a receipt of u, a unit whose desired state
// is a document in a revision store (a ConfigHub Unit), may not claim its
// writtenFile, or returns "": the field is written as itself in the unit's
// own document, which is no file of the pull request (the revision is
// written once it merges).
func writesStore(u *repoconfig.Unit, cf receipt.ChangedField) string {
	ref := u.StoreRef()
	switch want := ref.Path(); {
	case cf.WrittenFile != want:
		return fmt.Sprintf("names %q, but unit %s in %s is %s: a receipt of it writes %s",
			cf.WrittenFile, u.Name, u.Environment, ref, want)
	case cf.WrittenPath != cf.Field:
		return fmt.Sprintf("writes %s at %s, but the field of a document in a revision store is written at its own path",
			cf.Field, cf.WrittenPath)
	}
	return ""
}
