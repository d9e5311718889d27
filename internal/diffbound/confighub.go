package diffbound

import (
	"fmt"

	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// writesConfigHub says why cf of a receipt of u, a unit whose desired
// state is a ConfigHub Unit, may not claim its writtenFile, or returns "":
// the field is written as itself in the unit's own Unit, which is no file
// of the pull request (the revision is written once it merges).
func writesConfigHub(u *repoconfig.Unit, cf receipt.ChangedField) string {
	want := repoconfig.ConfigHubPath(u.ConfigHub)
	switch {
	case cf.WrittenFile != want:
		return fmt.Sprintf("names %q, but unit %s in %s is ConfigHub unit %s/%s: a receipt of it writes %s",
			cf.WrittenFile, u.Name, u.Environment, u.ConfigHub.Space, u.ConfigHub.Unit, want)
	case cf.WrittenPath != cf.Field:
		return fmt.Sprintf("writes %s at %s, but a ConfigHub unit's field is written at its own path",
			cf.Field, cf.WrittenPath)
	}
	return ""
}
