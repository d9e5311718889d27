package github

import (
	"testing"

	"github.com/backflow-dev/backflow/internal/forge/forgetest"
)

// TestContractAgainstLocalHub runs the forge contract over real HTTP and git
// against the local hub.
func TestContractAgainstLocalHub(t *testing.T) {
	forgetest.RunContract(t, func(t *testing.T) forgetest.Harness {
		return newEnv(t).harness(t)
	})
}
