package render

import (
	"context"
	"testing"
)

// chartRoots are the folders holding the real charts: redis is the demo's
// sample repository's (embedded in the binary), podinfo a test fixture.
var chartRoots = map[string]string{"redis": "../demo/sample/charts", "podinfo": "../../testdata/charts"}

func loadTestChart(t testing.TB, name string) *Chart {
	t.Helper()
	c, err := LoadFromSource(DirSource{Root: chartRoots[name]}, name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var redisOptions = Options{Release: "redis", Namespace: "redis"}

func TestMapFindsReplicaCount(t *testing.T) {
	// why: the chart itself must tell which value path drives the replicas
	// StatefulSet's spec.replicas: replica.replicaCount, directly.
	if raceEnabled {
		t.Skip("about 190 renderings of the redis chart take minutes under -race: make render runs this test")
	}
	c := loadTestChart(t, "redis")
	res, err := c.Map(context.Background(), redisOptions, []map[string]any{{"architecture": "replication", "auth": map[string]any{"existingSecret": "redis-auth"}}},
		"apps/v1|StatefulSet|redis|redis-replicas", "spec.replicas", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leaves %d, renders %d, failed %d, truncated %v", res.Leaves, res.Renders, res.Failed, res.Truncated)
	for _, d := range res.Drivers {
		t.Logf("%s direct=%v %v->%v also %d %v", d.ValuePath, d.Direct, d.Before, d.After, len(d.Also), d.Also)
	}
	if len(res.Drivers) == 0 || res.Drivers[0].ValuePath != "replica.replicaCount" || !res.Drivers[0].Direct || len(res.Drivers[0].Also) != 0 {
		t.Fatalf("drivers %+v, want replica.replicaCount first, direct, moving nothing else", res.Drivers)
	}
}
