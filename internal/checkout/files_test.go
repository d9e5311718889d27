package checkout

import (
	"fmt"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge/forgetest"
)

// writeFile writes data to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	return forgetest.WriteFile(t, dir, name, data)
}

// nativeDoc is an observation of redis-replicas' replicas in cluster.
func nativeDoc(cluster, observedAt, attribution string, live int) string {
	return fmt.Sprintf(`apiVersion: backflow.dev/v1alpha1
kind: ObjectStateObserved
spec:
  source: kubernetes
  cluster: %s
  observedAt: %q
  object: "apps/v1|StatefulSet|redis|redis-replicas"
  change: {actor: alice, groups: [sre], attribution: %s}
  fields:
    - {field: spec.replicas, live: %d, desired: 3}
`, cluster, observedAt, attribution, live)
}
