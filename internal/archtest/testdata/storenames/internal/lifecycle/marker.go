package lifecycle

import "github.com/backflow-dev/backflow/internal/repoconfig"

// UnmarshalJSON is excused only in revision.go.
func UnmarshalJSON(name string) repoconfig.StoreRef {
	_, _ = repoconfig.ConfigHubOf(repoconfig.StoreRef{Name: name}) // found: a store's name outside the excused function
	return repoconfig.StoreRef{Store: "confighub", Name: name}
}
