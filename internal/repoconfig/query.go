package repoconfig

import (
	"sort"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// EnvironmentOf returns the environment a cluster belongs to.
func (c *Config) EnvironmentOf(cluster string) (string, bool) {
	if c.index != nil {
		env, ok := c.index.envOf[cluster]
		return env, ok
	}
	for name, e := range c.Environments {
		for _, cl := range e.Clusters {
			if cl == cluster {
				return name, true
			}
		}
	}
	return "", false
}

// RequiresClusterAgreement reports whether a change in env is accepted only
// when every cluster of env reports the same live value: the environment's
// own setting, else the top-level one (default false).
func (c *Config) RequiresClusterAgreement(env string) bool {
	if e, ok := c.Environments[env]; ok && e.RequireClusterAgreement != nil {
		return *e.RequireClusterAgreement
	}
	return c.RequireClusterAgreement
}

// UnitFor returns the unit that renders the object (key
// apiVersion|Kind|namespace|name) in env. Validation guarantees at most one.
func (c *Config) UnitFor(env, object string) (*Unit, bool) {
	if c.index == nil {
		for i := range c.Units {
			if c.Units[i].Environment == env && c.Units[i].claims(object) {
				return &c.Units[i], true
			}
		}
		return nil, false
	}
	if k, err := observe.ParseObjectPattern(object); err == nil {
		for _, i := range c.index.claims[claimKey{env, k.Kind, k.Namespace}] {
			if c.Units[i].claims(object) {
				return &c.Units[i], true
			}
		}
	}
	for _, i := range c.index.wild[env] {
		if c.Units[i].claims(object) {
			return &c.Units[i], true
		}
	}
	return nil, false
}

func (u *Unit) claims(object string) bool {
	for _, p := range u.Objects {
		if policy.MatchKey(p, object) {
			return true
		}
	}
	return false
}

// RolesFor returns, sorted, the roles held by actor directly or through one
// of groups. An empty actor holds no role, whatever its groups.
func (c *Config) RolesFor(actor string, groups []string) []string {
	if actor == "" {
		return nil
	}
	var roles []string
	for name, r := range c.Roles {
		if contains(r.Users, actor) || containsAny(r.Groups, groups) {
			roles = append(roles, name)
		}
	}
	sort.Strings(roles)
	return roles
}

// Accepts reports whether the role accepts changes attributed at level a.
func (r Role) Accepts(a observe.Attribution) bool {
	levels := r.Attribution
	if levels == nil {
		levels = DefaultAttribution
	}
	for _, l := range levels {
		if l == a && a != observe.AttributionUnknown {
			return true
		}
	}
	return false
}

// Login returns the GitHub login of a cluster actor, for Co-authored-by.
func (c *Config) Login(actor string) (string, bool) {
	l, ok := c.Identities[actor]
	return l, ok
}

// Branch is the write-back branch of a unit: <branchPrefix><environment>/<name>.
func (c *Config) Branch(u *Unit) string {
	prefix := c.PullRequests.BranchPrefix
	if prefix == "" {
		prefix = DefaultBranchPrefix
	}
	return prefix + u.Environment + "/" + u.Name
}

// IgnoresField reports whether a Kubernetes field path matches ignoreFields.
func (c *Config) IgnoresField(path string) bool {
	if c.index != nil {
		segs, err := yamlnode.ParsePath(path)
		if err != nil {
			return false
		}
		for _, p := range c.index.fields {
			if matchSegs(p.segs, segs) {
				return true
			}
		}
		return false
	}
	for _, s := range c.IgnoreFields {
		p, err := CompileFieldPattern(s)
		if err == nil && p.Match(path) {
			return true
		}
	}
	return false
}

// IgnoresManager reports whether writes by the field manager are never drift.
func (c *Config) IgnoresManager(manager string) bool {
	return manager != "" && contains(c.IgnoreManagers, manager)
}

// Writable says why backflow must not write the repository file p (outside
// the repository, the repo config, the policy, a receipt, CODEOWNERS, a
// workflow), or returns nil.
func (c *Config) Writable(p string) error {
	if err := checkRepoPath(p); err != nil {
		return err
	}
	dir := c.Receipts.Dir
	if dir == "" {
		dir = DefaultReceiptsDir
	}
	return c.checkValuesFile(p, dir)
}

// WritesBack reports whether allowed changes become pull requests: not when
// paused or in observe-only mode.
func (c *Config) WritesBack() bool {
	return !c.Paused && c.Mode != ModeObserveOnly
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsAny(list, wanted []string) bool {
	for _, s := range wanted {
		if contains(list, s) {
			return true
		}
	}
	return false
}
