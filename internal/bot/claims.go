package bot

import (
	"slices"
	"strings"
	"sync"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// claims indexes which repositories' units claim which objects
// (units[].objects: exact keys and globs), from each repository's config as
// its latest cycle read it, so that an observation cycles only the
// repositories it concerns. A repository not cycled yet is concerned by
// every object: its config is unknown.
type claims struct {
	mu    sync.RWMutex
	repos map[string]*repoClaims     // by lower-case name
	exact map[string]map[string]bool // object key -> repositories
	globs map[string][]claimGlob     // by the pattern's kind; "" holds kinds with a *
	names map[string]string          // lower-case name -> "owner/name"
}

type repoClaims struct {
	head     string // the commit the config was read at
	patterns []string
}

type claimGlob struct {
	pattern, repo string
}

func newClaims() *claims {
	return &claims{
		repos: map[string]*repoClaims{},
		exact: map[string]map[string]bool{},
		globs: map[string][]claimGlob{},
		names: map[string]string{},
	}
}

// set records the objects repo's units claim at head (none when cfg is
// nil: no config, paused, or invalid). It does nothing when repo's claims
// were already read at head.
func (c *claims) set(repo, head string, cfg *repoconfig.Config) {
	k := strings.ToLower(repo)
	c.mu.RLock()
	old := c.repos[k]
	c.mu.RUnlock()
	if old != nil && head != "" && old.head == head {
		return
	}
	var patterns []string
	if cfg != nil {
		for _, u := range cfg.Units {
			patterns = append(patterns, u.Objects...)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.repos[k]; old != nil {
		for _, p := range old.patterns {
			if !strings.Contains(p, "*") {
				delete(c.exact[p], k)
				if len(c.exact[p]) == 0 {
					delete(c.exact, p)
				}
				continue
			}
			b := globKind(p)
			c.globs[b] = slices.DeleteFunc(c.globs[b], func(g claimGlob) bool { return g.repo == k })
		}
	}
	c.repos[k] = &repoClaims{head: head, patterns: patterns}
	c.names[k] = repo
	for _, p := range patterns {
		if !strings.Contains(p, "*") {
			if c.exact[p] == nil {
				c.exact[p] = map[string]bool{}
			}
			c.exact[p][k] = true
			continue
		}
		b := globKind(p)
		if !slices.ContainsFunc(c.globs[b], func(g claimGlob) bool { return g.repo == k && g.pattern == p }) {
			c.globs[b] = append(c.globs[b], claimGlob{pattern: p, repo: k})
		}
	}
}

// forget makes repo's claims unknown again.
func (c *claims) forget(repo string) {
	c.set(repo, "", nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.repos, strings.ToLower(repo))
}

// globKind is the bucket of a glob: its kind when the kind is fixed.
func globKind(pattern string) string {
	k, err := observe.ParseObjectPattern(pattern)
	if err != nil || strings.Contains(k.Kind, "*") {
		return ""
	}
	return k.Kind
}

// concerned returns the repositories of known that objects concern: those
// whose units claim one of them, and those whose config is not known yet.
// An object with an empty Kind (an audit event names a resource, not a
// kind) or apiVersion (cub-scout's events name none) is matched by its
// other segments.
func (c *claims) concerned(objects []observe.ObjectKey, known []string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	hit := map[string]bool{}
	for _, o := range objects {
		if o.Kind == "" || o.APIVersion == "" {
			c.partial(o, hit)
			continue
		}
		key := o.String()
		for r := range c.exact[key] {
			hit[r] = true
		}
		for _, b := range []string{o.Kind, ""} {
			for _, g := range c.globs[b] {
				if !hit[g.repo] && policy.MatchKey(g.pattern, key) {
					hit[g.repo] = true
				}
			}
		}
	}
	var out []string
	for _, r := range known {
		k := strings.ToLower(r)
		if _, read := c.repos[k]; !read || hit[k] {
			out = append(out, r)
		}
	}
	return out
}

// partial matches o, whose kind or apiVersion is unknown, against every
// pattern with the unknown segments ignored.
func (c *claims) partial(o observe.ObjectKey, hit map[string]bool) {
	want := []string{o.APIVersion, o.Kind, o.Namespace, o.Name}
	match := func(pattern string) bool {
		k, err := observe.ParseObjectPattern(pattern)
		if err != nil {
			return false
		}
		for i, p := range k.Segments() {
			if (i > 1 || want[i] != "") && !policy.Glob(p, want[i]) {
				return false
			}
		}
		return true
	}
	for k, rc := range c.repos {
		if hit[k] {
			continue
		}
		for _, p := range rc.patterns {
			if match(p) {
				hit[k] = true
				break
			}
		}
	}
}
