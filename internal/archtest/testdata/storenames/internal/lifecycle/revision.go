package lifecycle

import "github.com/backflow-dev/backflow/internal/repoconfig"

// UnmarshalJSON is the excused reader of ConfigHub's earlier marker form.
func UnmarshalJSON(space, unit string) repoconfig.StoreRef {
	return repoconfig.StoreRef{Store: repoconfig.StoreConfigHub, Name: space + "/" + unit}
}
