package plan

import (
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

func read(u *repoconfig.Unit) string {
	if u.ConfigHub != nil { // found: a unit's ConfigHub field
		return receipt.MethodConfigHubRevision // found: ConfigHub's method
	}
	if ref := u.StoreRef(); ref != nil && ref.Store == repoconfig.StoreConfigHub { // found: ConfigHub's kind
		return receipt.ConfigHubRevision(ref.Name, "", 1) // found: ConfigHub's revision syntax
	}
	return receipt.MethodPullRequest
}

var _ repoconfig.ConfigHub // found: ConfigHub's configuration type
