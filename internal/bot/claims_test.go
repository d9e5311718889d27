package bot

import (
	"slices"
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

func unitsClaiming(objects ...string) *repoconfig.Config {
	return &repoconfig.Config{Units: []repoconfig.Unit{{Name: "redis", Objects: objects}}}
}

// Why: a push of one object's observation must cycle the repositories that
// claim it, not the whole fleet; a repository whose config is not read yet
// may claim anything, and one that changed its config at a new head claims
// what the new config says.
func TestClaimsFindTheRepositoriesConcerned(t *testing.T) {
	c := newClaims()
	known := []string{"acme/east", "acme/west", "acme/glob", "acme/none", "acme/new"}
	c.set("acme/east", "h1", unitsClaiming("apps/v1|StatefulSet|redis|redis-east"))
	c.set("acme/west", "h1", unitsClaiming("apps/v1|StatefulSet|redis|redis-west"))
	c.set("acme/glob", "h1", unitsClaiming("apps/v1|Deployment|web|*", "*|ConfigMap|*|shared"))
	c.set("acme/none", "h1", nil) // no config: claims nothing
	key := func(apiVersion, kind, ns, name string) observe.ObjectKey {
		return observe.ObjectKey{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}
	}
	cases := []struct {
		why     string
		objects []observe.ObjectKey
		want    []string
	}{
		{"an exact key", []observe.ObjectKey{key("apps/v1", "StatefulSet", "redis", "redis-east")}, []string{"acme/east", "acme/new"}},
		{"a glob with a fixed kind", []observe.ObjectKey{key("apps/v1", "Deployment", "web", "api")}, []string{"acme/glob", "acme/new"}},
		{"a glob of any kind", []observe.ObjectKey{key("v1", "ConfigMap", "kube-system", "shared")}, []string{"acme/glob", "acme/new"}},
		{"claimed by none", []observe.ObjectKey{key("v1", "Service", "redis", "redis-east")}, []string{"acme/new"}},
		{"an audit event names no kind", []observe.ObjectKey{key("apps/v1", "", "redis", "redis-west")}, []string{"acme/west", "acme/new"}},
		{"cub-scout names no apiVersion", []observe.ObjectKey{key("", "StatefulSet", "redis", "redis-east")}, []string{"acme/east", "acme/new"}},
		{"several objects", []observe.ObjectKey{key("apps/v1", "StatefulSet", "redis", "redis-east"), key("apps/v1", "StatefulSet", "redis", "redis-west")}, []string{"acme/east", "acme/west", "acme/new"}},
	}
	for _, tc := range cases {
		if got := c.concerned(tc.objects, known); !slices.Equal(got, tc.want) {
			t.Errorf("%s: concerned = %v, want %v", tc.why, got, tc.want)
		}
	}
	// A new head whose config claims another object: the old claim is gone.
	c.set("acme/east", "h2", unitsClaiming("apps/v1|StatefulSet|redis|redis-north"))
	if got := c.concerned([]observe.ObjectKey{key("apps/v1", "StatefulSet", "redis", "redis-east")}, known); !slices.Equal(got, []string{"acme/new"}) {
		t.Errorf("after the config changed: concerned = %v, want only the unread repository", got)
	}
	// A config that could not be read makes the repository unknown again.
	c.forget("acme/west")
	if got := c.concerned([]observe.ObjectKey{key("v1", "Service", "x", "y")}, known); !slices.Equal(got, []string{"acme/west", "acme/new"}) {
		t.Errorf("after a failed read: concerned = %v, want the forgotten and the unread repositories", got)
	}
}
