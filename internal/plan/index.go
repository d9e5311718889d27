package plan

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// planner holds what one Plan call derives once from the snapshot: indexes
// over units and policy entries, the compiled ignoreFields globs, and each
// unit's values read at most once.
type planner struct {
	snap Snapshot
	cfg  *repoconfig.Config
	now  time.Time
	// freshness is how long a higher-trust observation outranks a newer,
	// lower-trust one of the same object.
	freshness time.Duration
	ignore    []repoconfig.FieldPattern
	// units indexes the config's units by environment.
	units map[string]*envUnits
	// entries indexes the policy's mayAccept entries by Kubernetes field.
	entries map[string][]entry
	// grants holds, by rule and entry, the text a receipt's matchedRule
	// gives the entry: the same for every field it authorizes.
	grants [][]string
	values map[*repoconfig.Unit]*unitValues
	// readings keeps Helm's reading of each values document by its bytes,
	// for the values editor to take; parsed keeps the editor's reading of
	// each values file.
	readings *values.Readings
	parsed   *parsedFiles
	// workers bounds the goroutines of the per-unit work.
	workers int
	// paths holds each value path parsed.
	paths map[string]parsedPath
	// files are the snapshot's file paths, sorted once for the units of
	// manifests that list folders.
	pathsOnce sync.Once
	files     []string
	res       Result
	// allowed collects, per unit, the allowed decisions awaiting a write-back.
	allowed map[*repoconfig.Unit][]*pending
	// rendering serialises calls to the snapshot's Renderer, which units
	// built concurrently share.
	rendering sync.Mutex
	// glass is what the default branch's receipts say of temporary
	// acceptances (expiry.go).
	glass *glass
}

// envUnits finds the unit of an object in one environment: exact object
// keys through a map; globs whose only wildcards are in the last segment
// (apps/v1|Deployment|web|*) bucketed by the segments before it, which an
// object must equal; the other globs in config order. Each list is in
// config order, so an object's lookup costs the globs of its own
// apiVersion, kind and namespace, not every unit's.
type envUnits struct {
	exact map[string]unitGlob
	// byPrefix holds globs by the literal segments before their last `|`.
	byPrefix map[string][]unitGlob
	globs    []unitGlob
}

type unitGlob struct {
	pattern string
	unit    *repoconfig.Unit
	order   int
}

// entry is one mayAccept entry and the role of its rule.
type entry struct {
	role string
	a    *policy.Accept
}

func newPlanner(snap Snapshot, now time.Time, opts Options) *planner {
	cfg := snap.Config
	if cfg == nil {
		cfg = &repoconfig.Config{}
	}
	p := &planner{
		snap: snap, cfg: cfg, now: now.UTC(),
		units:    map[string]*envUnits{},
		entries:  map[string][]entry{},
		values:   map[*repoconfig.Unit]*unitValues{},
		readings: opts.Readings,
		parsed:   &parsedFiles{m: map[parsedKey]*parsedFile{}},
		paths:    map[string]parsedPath{},
		allowed:  map[*repoconfig.Unit][]*pending{},
	}
	if p.readings == nil {
		p.readings = values.NewReadings()
	}
	p.workers = opts.Workers
	if p.workers <= 0 {
		p.workers = runtime.GOMAXPROCS(0)
	}
	if snap.Config == nil {
		p.res.Errors = append(p.res.Errors, "no repo config: every object is unmapped")
	}
	for _, s := range cfg.IgnoreFields {
		// Validation compiled these already; one that does not compile
		// ignores nothing rather than everything.
		if fp, err := repoconfig.CompileFieldPattern(s); err == nil {
			p.ignore = append(p.ignore, fp)
		}
	}
	for i := range cfg.Units {
		u := &cfg.Units[i]
		eu := p.units[u.Environment]
		if eu == nil {
			eu = &envUnits{exact: map[string]unitGlob{}, byPrefix: map[string][]unitGlob{}}
			p.units[u.Environment] = eu
		}
		for _, pat := range u.Objects {
			if !strings.Contains(pat, "*") {
				if _, taken := eu.exact[pat]; !taken {
					eu.exact[pat] = unitGlob{pattern: pat, unit: u, order: i}
				}
				continue
			}
			g := unitGlob{pattern: pat, unit: u, order: i}
			if prefix, last, ok := cutLast(pat); ok && !strings.Contains(prefix, "*") {
				g.pattern = last
				eu.byPrefix[prefix] = append(eu.byPrefix[prefix], g)
				continue
			}
			eu.globs = append(eu.globs, g)
		}
	}
	if snap.Policy != nil {
		p.grants = make([][]string, len(snap.Policy.Rules))
		for ri := range snap.Policy.Rules {
			r := &snap.Policy.Rules[ri]
			p.grants[ri] = make([]string, len(r.MayAccept))
			for ai := range r.MayAccept {
				a := &r.MayAccept[ai]
				p.entries[a.Field] = append(p.entries[a.Field], entry{role: r.Role, a: a})
				p.grants[ri][ai] = grant(r.Role, a.ValuePath, a.Field, &policy.Match{Rule: ri, Accept: ai})
				if _, ok := p.paths[a.ValuePath]; !ok {
					p.paths[a.ValuePath] = parsePath(a.ValuePath)
				}
			}
		}
	}
	return p
}

// unitFor returns the unit that renders object in env: the same answer as
// repoconfig's UnitFor (the first unit in config order), found faster.
func (p *planner) unitFor(env, object string) *repoconfig.Unit {
	eu := p.units[env]
	if eu == nil {
		return nil
	}
	best, found := eu.exact[object]
	// A bucketed glob matches when the object's segments before the last
	// equal its prefix and its last segment matches the glob's: the same
	// answer as MatchKey on the whole key, since a literal segment matches
	// only itself.
	if prefix, last, ok := cutLast(object); ok {
		for _, g := range eu.byPrefix[prefix] {
			if found && g.order >= best.order {
				break
			}
			if policy.Glob(g.pattern, last) {
				best, found = g, true
				break
			}
		}
	}
	for _, g := range eu.globs {
		if found && g.order >= best.order {
			break
		}
		if policy.MatchKey(g.pattern, object) {
			return g.unit
		}
	}
	return best.unit
}

// cutLast splits an object key or pattern at its last `|`.
func cutLast(key string) (prefix, last string, ok bool) {
	i := strings.LastIndexByte(key, '|')
	if i < 0 {
		return "", "", false
	}
	return key[:i], key[i+1:], true
}

func (p *planner) ignoresField(path string) bool {
	for _, fp := range p.ignore {
		if fp.Match(path) {
			return true
		}
	}
	return false
}

// group is every observation of one object in one environment (or, when
// the environment is unknown, on one cluster).
type group struct {
	env string
	// key is the object's key; object its text, which the indices of
	// desired objects and the policy's patterns are read with.
	key    observe.ObjectKey
	object string
	// unmappedWhy is set when the environment is unknown.
	unmappedWhy string
	newest      *observe.Observation
	// perCluster is each cluster's newest observation, in first-seen order
	// (an environment has a few clusters: a slice, not a map).
	perCluster []clusterObservation
	// notes are problems with the observations, reported with the decision.
	notes []string
}

type clusterObservation struct {
	cluster string
	o       *observe.Observation
}

// of is the cluster's newest observation in the group, or nil.
func (g *group) of(cluster string) *observe.Observation {
	for _, c := range g.perCluster {
		if c.cluster == cluster {
			return c.o
		}
	}
	return nil
}

// setOf makes o the cluster's newest observation in the group.
func (g *group) setOf(cluster string, o *observe.Observation) {
	for i := range g.perCluster {
		if g.perCluster[i].cluster == cluster {
			g.perCluster[i].o = o
			return
		}
	}
	g.perCluster = append(g.perCluster, clusterObservation{cluster, o})
}

// groupKey tells groups apart: an object in an environment, or, when the
// environment is unknown (env is empty), an object on a cluster.
type groupKey struct {
	env, cluster string
	object       observe.ObjectKey
}

// group reduces observations to one group per object and environment, in
// first-seen order. The newest observation wins (see supersedes). An
// observation whose cluster no environment lists, or whose document names
// an environment other than its cluster's, is refused: it joins an unmapped
// group of its cluster and the refusal is a planning error naming the
// document.
func (p *planner) group(observations []observe.Observation) []*group {
	var out []*group
	byKey := make(map[groupKey]*group, len(observations))
	for i := range observations {
		o := &observations[i]
		env, why := p.environmentOf(o)
		key := groupKey{env: env, object: o.Object}
		if env == "" {
			key.cluster = o.Cluster
			if p.snap.Config != nil {
				p.res.Errors = append(p.res.Errors, documentOf(o)+": "+why)
			}
		}
		g := byKey[key]
		if g == nil {
			g = &group{env: env, key: o.Object, object: o.Object.String()}
			if env == "" {
				g.unmappedWhy = "unmapped: " + why
			}
			byKey[key] = g
			out = append(out, g)
		}
		if g.newest == nil || (supersedes(o, g.newest) && !outranks(g.newest, o, p.now, p.freshness)) ||
			outranks(o, g.newest, p.now, p.freshness) {
			g.newest = o
		}
		if c := g.of(o.Cluster); c != nil && c.UID != "" && o.UID != "" && c.UID != o.UID {
			// The same name, another object: what was seen of the older one
			// says nothing about the newer.
			older, newer := c, o
			if supersedes(c, o) {
				older, newer = o, c
			}
			note := fmt.Sprintf(
				"recreated: %s on cluster %s was deleted and created again (uid %s at %s, uid %s at %s); only the newer object's "+
					"observation is used",
				o.Object,
				o.Cluster,
				older.UID,
				older.ObservedAt.UTC().Format(time.RFC3339),
				newer.UID,
				newer.ObservedAt.UTC().Format(time.RFC3339),
			)
			if !slices.Contains(g.notes, note) {
				g.notes = append(g.notes, note)
			}
		}
		if c := g.of(o.Cluster); c == nil || (supersedes(o, c) && !outranks(c, o, p.now, p.freshness)) ||
			outranks(o, c, p.now, p.freshness) {
			g.setOf(o.Cluster, o)
		}
	}
	return out
}

// documentOf names the document an observation was read from, for errors.
func documentOf(o *observe.Observation) string {
	if o.Origin != "" {
		return o.Origin
	}
	return fmt.Sprintf("observation of %s on cluster %q", o.Object, o.Cluster)
}

// environmentOf maps an observation to its environment. The repository is
// the only authority on which cluster belongs to which environment: a
// cluster no environment lists has none, whatever the document or its
// source's trust says, and a document that names another environment than
// its cluster's is refused (env is empty and why says so).
func (p *planner) environmentOf(o *observe.Observation) (env, why string) {
	e, ok := p.cfg.EnvironmentOf(o.Cluster)
	if !ok {
		why = fmt.Sprintf("cluster %q is in no environment of %s", o.Cluster, repoconfig.Path)
		if o.Cluster == "" {
			why = fmt.Sprintf(
				"the %s observation names no cluster, so no environment of %s can be found",
				sourceName(o),
				repoconfig.Path,
			)
		}
		if o.Environment != "" {
			why += fmt.Sprintf("; the environment %s the document names is not believed", o.Environment)
		}
		return "", why
	}
	if o.Environment != "" && o.Environment != e {
		return "", fmt.Sprintf(
			"the document names environment %s, but %s puts cluster %q in %s: the observation is refused",
			o.Environment,
			repoconfig.Path,
			o.Cluster,
			e,
		)
	}
	return e, ""
}

// supersedes reports whether o replaces cur as the observation to decide
// on: it is newer; or, as new, it is attributed at least as far (two
// observers reading the object at the same time, one of which knows who
// changed it); or, as new and as attributed, it comes later in the input.
func supersedes(o, cur *observe.Observation) bool {
	if !o.ObservedAt.Equal(cur.ObservedAt) {
		return o.ObservedAt.After(cur.ObservedAt)
	}
	return o.Change.Attribution.Rank() >= cur.Change.Attribution.Rank()
}
