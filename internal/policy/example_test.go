package policy

import (
	"path/filepath"
	"testing"
)

// The policy users copy from config/ must load and decide as its comments say.
func TestExamplePolicy(t *testing.T) {
	p, err := Load(filepath.Join("..", "..", "config", "repo", "reverse-reconcile-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base := Request{Roles: []string{"platform-sre"}, Environment: "prod-eu-west",
		Object: "apps/v1|StatefulSet|redis|redis-replicas", Field: "spec.replicas",
		ValuePath: "replica.replicaCount", HasValue: true}
	cases := []struct {
		value any
		env   string
		allow bool
		why   string
	}{
		{4, "prod-eu-west", true, "a scale within bounds in a prod environment"},
		{11, "prod-eu-west", false, "above the maximum"},
		{0, "prod-us-east", false, "below the minimum"},
		{4, "staging", false, "not a prod environment"},
	}
	for _, c := range cases {
		req := base
		req.Value, req.Environment = c.value, c.env
		d := p.Evaluate(req)
		if d.Allowed != c.allow {
			t.Errorf("%s: allowed = %v, reasons %v", c.why, d.Allowed, d.Reasons)
		}
		if d.Allowed && !d.Match.AutoMerge {
			t.Errorf("%s: the entry is pre-authorized", c.why)
		}
	}
}
