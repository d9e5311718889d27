package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/server"
)

// maxPushedObjects bounds the objects whose pushed state is kept; past it
// the longest-unchanged are dropped (their observer will push again).
const maxPushedObjects = 10_000

// maxPushedBytes bounds the store by size too (each observation counted as
// its JSON encoding): ten thousand large objects would otherwise hold
// gigabytes. Past it the longest-unchanged are dropped.
const maxPushedBytes = 32 << 20

// PushStore receives pushes to /observations (server.ObservationSink) and
// serves them to every cycle (bot.Source): for each object, the latest
// observation at each trust level and the latest trigger, believed no
// higher than the trust ceiling configured for pushes.
//
// Observations are kept per object and per trust level so that a push of
// lower trust (the secret URL's, believed at asserted) never replaces what
// a higher-trust push (the bearer token's) established: the planner and
// the lifecycle see both, and rank them by trust within the freshness
// window (repoconfig's observations.freshness) and by the receipt's
// attribution. Only a newer observation at the same trust replaces one.
type PushStore struct {
	ceiling observe.Attribution
	// urlCeiling is the ceiling of pushes to the secret URL (asserted unless
	// the operator raised it).
	urlCeiling observe.Attribution
	cluster    string                             // when set: documents without a cluster are of it, others are refused
	concerned  func([]observe.ObjectKey) []string // the repositories a push of these objects concerns

	mu       sync.Mutex
	seq      uint64
	obs      map[string]pushed[observe.Observation]
	triggers map[string]pushed[observe.Trigger]
}

type pushed[T any] struct {
	v    T
	seq  uint64 // arrival order, for eviction
	size int    // bytes, as JSON
}

// NewPushStore is an empty store of pushes believed no higher than
// ceiling; cluster, when set, is the cluster of documents that name none
// (and the only one accepted); concerned lists the repositories to cycle
// after an accepted push of observations of objects.
func NewPushStore(
	ceiling observe.Attribution,
	cluster string,
	concerned func(objects []observe.ObjectKey) []string,
) *PushStore {
	return &PushStore{ceiling: ceiling, urlCeiling: observe.AttributionAsserted, cluster: cluster, concerned: concerned,
		obs: map[string]pushed[observe.Observation]{}, triggers: map[string]pushed[observe.Trigger]{}}
}

// SetURLCeiling sets the ceiling of pushes that came by the secret URL
// (asserted until set).
func (p *PushStore) SetURLCeiling(c observe.Attribution) { p.urlCeiling = c }

// Name implements bot.Source.
func (p *PushStore) Name() string { return "POST /observations" }

// Forget drops everything pushed so far: a replica that stops leading
// forgets what was pushed to it, which the next leader never saw and which
// would be stale by the time this replica leads again.
func (p *PushStore) Forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.obs, p.triggers = map[string]pushed[observe.Observation]{}, map[string]pushed[observe.Trigger]{}
}

// Read implements bot.Source.
func (p *PushStore) Read(context.Context) observe.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	var res observe.Result
	for _, k := range pushSortedKeys(p.obs) {
		res.Observations = append(res.Observations, p.obs[k].v)
	}
	for _, k := range pushSortedKeys(p.triggers) {
		res.Triggers = append(res.Triggers, p.triggers[k].v)
	}
	return res
}

// Accept implements server.ObservationSink. A push of which nothing is
// usable is refused as a whole with every reason; otherwise the usable
// documents are kept and the others named in the result.
func (p *PushStore) Accept(ctx context.Context, body []byte) (server.PushResult, error) {
	ceiling := p.ceiling
	if server.PushVia(ctx) == server.ViaSecretURL {
		ceiling = p.urlCeiling
	}
	res := observe.ParseBytes(body, observe.Options{Name: "observations", Ceiling: ceiling})
	var rejected []string
	for _, err := range res.Errors {
		rejected = append(rejected, err.Error())
	}
	var obs []observe.Observation
	for _, o := range res.Observations {
		if err := p.claim(&o.Cluster); err != nil {
			rejected = append(rejected, fmt.Sprintf("%s: %v", o.Origin, err))
			continue
		}
		obs = append(obs, o)
	}
	var triggers []observe.Trigger
	for _, t := range res.Triggers {
		if err := p.claim(&t.Cluster); err != nil {
			rejected = append(rejected, fmt.Sprintf("%s: %v", t.Origin, err))
			continue
		}
		triggers = append(triggers, t)
	}
	var forgets []observe.Forget
	for _, f := range res.Forgets {
		if err := p.claim(&f.Cluster); err != nil {
			rejected = append(rejected, fmt.Sprintf("%s: %v", f.Origin, err))
			continue
		}
		forgets = append(forgets, f)
	}
	var notices []string
	for _, n := range res.Notices {
		if err := p.claim(&n.Cluster); err != nil {
			rejected = append(rejected, fmt.Sprintf("%s: %v", n.Origin, err))
			continue
		}
		notices = append(notices, fmt.Sprintf("%s on %s: %s", n.Object, n.Cluster, n.Message))
	}
	accepted := len(obs) + len(triggers) + len(forgets) + len(notices)
	if accepted == 0 && len(rejected) > 0 {
		return server.PushResult{}, fmt.Errorf("%w: %s", server.ErrInvalidPush, pushJoin(rejected, 5))
	}
	p.mu.Lock()
	for _, o := range obs {
		k := pushKey(o)
		if old, ok := p.obs[k]; ok && old.v.ObservedAt.After(o.ObservedAt) {
			continue // an older observation arriving late does not replace a newer one
		}
		p.seq++
		p.obs[k] = pushed[observe.Observation]{o, p.seq, jsonSize(o)}
	}
	for _, t := range triggers {
		p.seq++
		p.triggers[t.Cluster+"\x00"+t.Object.String()] = pushed[observe.Trigger]{t, p.seq, jsonSize(t)}
	}
	// What a push is believed at: a deletion it reports is believed no
	// further than its observations would be.
	trust := ceiling
	if trust == "" {
		trust = observe.DefaultCeiling
	}
	for _, f := range forgets {
		// A deleted object's pushed state describes nothing live; but a
		// push says so only as far as it is trusted: the observations
		// above its trust (the bearer token's, when the secret URL says it
		// is gone) stay, ranked by the planner as any other.
		for k, o := range p.obs {
			if f.Covers(o.v.Cluster, o.v.Object, o.v.ObservedAt) && o.v.TrustLevel().Rank() <= trust.Rank() {
				delete(p.obs, k)
			}
		}
		for k, t := range p.triggers {
			if f.Covers(t.v.Cluster, t.v.Object, t.v.At) {
				delete(p.triggers, k)
			}
		}
	}
	evictPushed(p.obs)
	evictPushed(p.triggers)
	p.mu.Unlock()
	out := server.PushResult{Accepted: accepted, Rejected: rejected, Notices: notices}
	if len(obs)+len(triggers) > 0 {
		// Which repositories an object belongs to is in their repo
		// configs: the repositories whose units claim the objects (or
		// whose configs are not read yet) are cycled, the others not.
		objects := make([]observe.ObjectKey, 0, len(obs)+len(triggers))
		for _, o := range obs {
			objects = append(objects, o.Object)
		}
		for _, t := range triggers {
			objects = append(objects, t.Object)
		}
		out.Repositories = p.concerned(objects)
	}
	return out, nil
}

// pushKey is where an observation is kept: its cluster, its object and
// its trust level, so that only an observation of the same trust replaces
// it.
func pushKey(o observe.Observation) string {
	return o.Cluster + "\x00" + o.Object.String() + "\x00" + string(o.TrustLevel())
}

// claim holds a document to the configured cluster.
func (p *PushStore) claim(cluster *string) error {
	switch {
	case p.cluster == "" && *cluster == "":
		return errors.New(
			"names no cluster (cub-scout watch says \"default\" when CLUSTER_NAME is unset), and server.observations.cluster " +
				"is not set",
		)
	case p.cluster == "" || *cluster == p.cluster:
		return nil
	case *cluster == "":
		*cluster = p.cluster
		return nil
	default:
		return fmt.Errorf("cluster %q refused: pushes are configured for cluster %q", *cluster, p.cluster)
	}
}

// evictPushed drops the oldest entries beyond maxPushedObjects, then
// beyond maxPushedBytes.
func evictPushed[T any](m map[string]pushed[T]) {
	total := 0
	for _, e := range m {
		total += e.size
	}
	if len(m) <= maxPushedObjects && total <= maxPushedBytes {
		return
	}
	keys := pushSortedKeys(m)
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]].seq < m[keys[j]].seq })
	for _, k := range keys {
		if len(m) <= maxPushedObjects && total <= maxPushedBytes {
			return
		}
		total -= m[k].size
		delete(m, k)
	}
}

// jsonSize is v's size as JSON, what the store is capped by.
func jsonSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

func pushSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// pushJoin joins the first n messages and says how many more there were.
func pushJoin(msgs []string, n int) string {
	if len(msgs) <= n {
		return fmt.Sprint(msgs)
	}
	return fmt.Sprintf("%v and %d more", msgs[:n], len(msgs)-n)
}
