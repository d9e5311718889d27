package source

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/backflow-dev/backflow/internal/observe"
)

// This file observes live objects in a Kubernetes cluster directly. What
// changed live is read from managedFields: a field owned by a manager other
// than the GitOps controllers (and other than the ignored managers) was set
// by someone else, and is part of the observation whether or not a policy
// maps it. A field owned by a GitOps controller too holds the value the
// controller applied, so it has converged.

// DefaultKubeResync is how often the informers re-list their objects.
const DefaultKubeResync = 10 * time.Minute

// DefaultAuditSettle is how long a fresh change waits for its audit event.
const DefaultAuditSettle = 3 * time.Second

// ForwardApplyMemory is how long a live change that a GitOps controller's
// forward apply then wrote over is still reported, as the controller's
// write: long enough for the cycles that follow up on it.
const ForwardApplyMemory = time.Hour

// KubeConfig says how to reach one cluster and what to watch in it. The bot
// config holds one per cluster.
type KubeConfig struct {
	// Kubeconfig is the path of a kubeconfig file; empty with InCluster, or
	// to use the default loading rules ($KUBECONFIG, ~/.kube/config).
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context; empty means its current context.
	Context string `yaml:"context"`
	// InCluster uses the pod's service account instead of a kubeconfig.
	InCluster bool `yaml:"inCluster"`
	// Objects are the object keys to watch, apiVersion|Kind|namespace|name,
	// where * matches any run of characters within one segment (the units'
	// objects). apiVersion and Kind must be literal: they name the
	// resources to list and watch.
	Objects []string `yaml:"objects"`
	// GitOpsManagers are the field managers of the GitOps controllers whose
	// forward apply is desired state.
	GitOpsManagers []string `yaml:"gitopsManagers"`
	// IgnoreManagers are field managers whose writes are never live changes
	// (autoscalers, operators).
	IgnoreManagers []string `yaml:"ignoreManagers"`
	// Resync is the informers' re-list period; zero means DefaultKubeResync.
	Resync time.Duration `yaml:"resync"`
}

// KubeSource watches the objects of one cluster and yields one observation
// per watched object each Read. It is safe for concurrent use.
type KubeSource struct {
	// Cluster names the cluster in observations.
	Cluster string
	// Client reads the cluster.
	Client dynamic.Interface
	// Mapper maps kinds to resources.
	Mapper meta.RESTMapper
	// Objects, GitOpsManagers, IgnoreManagers and Resync are as in KubeConfig.
	Objects        []string
	GitOpsManagers []string
	IgnoreManagers []string
	Resync         time.Duration
	// Audit, when set, attributes each observation with the audit events
	// (with the live object at hand to resolve list items); without it,
	// fields are attributed from managedFields alone.
	Audit *AuditLog
	// Admission, when set, is told each change the watch sees (the object
	// before and after), to confirm the admission record of that very
	// transition, and its confirmed
	// records attribute the observations (see observe.AttributeAll).
	Admission *observe.AdmissionLog
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnChange, when set, is called (from an informer goroutine) with the
	// key of a watched object that was added or changed, so a cycle can
	// start at once rather than at the next schedule.
	OnChange func(observe.ObjectKey)
	// AuditSettle is how long, with Audit set, a fresh change that no audit
	// event attributes yet is held back before it is reported below
	// audit-log: the event usually arrives a moment after the watch shows
	// the change. OnChange is called again when it has passed. Zero means
	// DefaultAuditSettle.
	AuditSettle time.Duration

	// Transitions keeps the person's changes the watch sees, so that a
	// GitOps controller's revert before the next Read does not erase them
	// (see observe.RevertedFields); nil means a log of its own with
	// observe's defaults, built by Start on the source's clock.
	Transitions *observe.TransitionLog

	// Config, when Client is nil, is what Start builds the client and the
	// mapper from (so a source can be configured before its cluster is
	// reachable).
	Config *KubeConfig

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	watches []*kubeWatch
	// applied remembers, per object uid, the fields seen changed live, and
	// since when a GitOps controller has written them (zero while a person
	// still owns them).
	applied map[string]map[string]time.Time

	cmu       sync.Mutex
	changedAt map[string]time.Time // object uid -> when the watch last saw it change
}

type kubeWatch struct {
	gvk      schema.GroupVersionKind
	patterns []objectGlob
	informer cache.SharedIndexInformer
}

// NewKubeSource builds the source of cluster from cfg: one client, and a
// discovery-backed mapper from kinds to resources.
func NewKubeSource(cluster string, cfg KubeConfig) (*KubeSource, error) {
	rc, err := restConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster, err)
	}
	client, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster, err)
	}
	return &KubeSource{
		Cluster: cluster, Client: client,
		Mapper:  restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		Objects: cfg.Objects, GitOpsManagers: cfg.GitOpsManagers, IgnoreManagers: cfg.IgnoreManagers, Resync: cfg.Resync,
	}, nil
}

// RESTConfig is the client config the source would use for cfg (its
// kubeconfig, context or the pod's service account), for other clients of
// the same cluster.
func RESTConfig(cfg KubeConfig) (*rest.Config, error) { return restConfig(cfg) }

func restConfig(cfg KubeConfig) (*rest.Config, error) {
	if cfg.InCluster {
		if cfg.Kubeconfig != "" || cfg.Context != "" {
			return nil, errors.New("inCluster excludes kubeconfig and context")
		}
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, err
		}
		rc.UserAgent = "backflow"
		return rc, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if cfg.Kubeconfig != "" {
		rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: cfg.Kubeconfig}
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.Context}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	rc.UserAgent = "backflow"
	return rc, nil
}

// Name implements Reader.
func (s *KubeSource) Name() string { return "kubernetes cluster " + s.Cluster }

// Start lists the watched objects and starts watching them; it returns once
// the first list is in the cache. Read starts the source when it was not,
// and a start that failed is tried again by the next Read. ctx bounds only
// the wait for the first list; the watches run until Close.
func (s *KubeSource) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		watches := s.watches
		s.mu.Unlock()
		return s.waitSynced(ctx, watches)
	}
	watches, cancel, err := s.startLocked()
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.started, s.cancel, s.watches = true, cancel, watches
	s.mu.Unlock()
	if err := s.waitSynced(ctx, watches); err != nil {
		// Not started after all: the next Read tries again from scratch.
		s.mu.Lock()
		cancel()
		s.started, s.watches = false, nil
		s.mu.Unlock()
		return err
	}
	return nil
}

func (s *KubeSource) waitSynced(ctx context.Context, watches []*kubeWatch) error {
	for _, w := range watches {
		if !cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) {
			return fmt.Errorf("cluster %s: listing %s: %w", s.Cluster, w.gvk, context.Cause(ctx))
		}
	}
	return nil
}

// startLocked builds the client when only Config is set, maps each kind to
// its resource and starts an informer per kind. s.mu is held.
func (s *KubeSource) startLocked() ([]*kubeWatch, context.CancelFunc, error) {
	if s.Client == nil || s.Mapper == nil {
		if s.Config == nil {
			return nil, nil, fmt.Errorf("cluster %s: no client and no config", s.Cluster)
		}
		built, err := NewKubeSource(s.Cluster, *s.Config)
		if err != nil {
			return nil, nil, err
		}
		s.Client, s.Mapper = built.Client, built.Mapper
	}
	watches, err := s.plan()
	if err != nil {
		return nil, nil, err
	}
	resync := s.Resync
	if resync <= 0 {
		resync = DefaultKubeResync
	}
	if s.applied == nil {
		s.applied = map[string]map[string]time.Time{}
	}
	if s.Transitions == nil {
		s.Transitions = &observe.TransitionLog{Now: s.now}
	}
	run, cancel := context.WithCancel(context.Background())
	for _, w := range watches {
		mapping, err := s.Mapper.RESTMapping(w.gvk.GroupKind(), w.gvk.Version)
		if err != nil {
			cancel()
			return nil, nil, fmt.Errorf("cluster %s: %s: %w", s.Cluster, w.gvk, err)
		}
		ns := metav1.NamespaceAll
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ns = commonNamespace(w.patterns)
		}
		factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(s.Client, resync, ns, nil)
		w.informer = factory.ForResource(mapping.Resource).Informer()
		_, _ = w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.changed(w, nil, obj) },
			UpdateFunc: func(old, obj any) { s.changed(w, old, obj) },
		})
		factory.Start(run.Done())
	}
	return watches, cancel, nil
}

// Close stops the watches.
func (s *KubeSource) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
	}
}

// changed records when a watched object last changed (a re-list that
// delivers the same resourceVersion is not a change) and tells OnChange.
func (s *KubeSource) changed(w *kubeWatch, old, obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	o, _ := old.(*unstructured.Unstructured)
	if o != nil && o.GetResourceVersion() == u.GetResourceVersion() {
		return
	}
	k := unstructuredKey(u)
	if !matchAny(w.patterns, k) {
		return
	}
	if s.Admission != nil {
		// The transition from the version the watch saw before (none on
		// a list) is what settles the records waiting for it.
		var before map[string]any
		if o != nil {
			before = o.Object
		}
		s.Admission.Confirm(s.Cluster, before, u.Object)
	}
	s.recordTransition(k, o, u)
	s.cmu.Lock()
	if s.changedAt == nil {
		s.changedAt = map[string]time.Time{}
	}
	s.changedAt[string(u.GetUID())] = s.now()
	s.cmu.Unlock()
	if s.OnChange != nil {
		s.OnChange(k)
	}
}

func (s *KubeSource) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// unsettled says how much longer a change seen at changedAt waits for its
// audit event; zero when it need not wait.
func (s *KubeSource) unsettled(uid string, now time.Time) time.Duration {
	settle := s.AuditSettle
	if settle <= 0 {
		settle = DefaultAuditSettle
	}
	s.cmu.Lock()
	at, ok := s.changedAt[uid]
	s.cmu.Unlock()
	if !ok || now.Sub(at) >= settle {
		return 0
	}
	return settle - now.Sub(at)
}

// plan groups the object globs by kind.
func (s *KubeSource) plan() ([]*kubeWatch, error) {
	if len(s.Objects) == 0 {
		return nil, fmt.Errorf("cluster %s: no objects to watch", s.Cluster)
	}
	by := map[schema.GroupVersionKind]*kubeWatch{}
	var out []*kubeWatch
	for i, o := range s.Objects {
		g, err := parseObjectGlob(o)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: objects[%d]: %w", s.Cluster, i, err)
		}
		group, version := observe.SplitAPIVersion(g.segs[0])
		gvk := schema.GroupVersionKind{Group: group, Version: version, Kind: g.segs[1]}
		if by[gvk] == nil {
			by[gvk] = &kubeWatch{gvk: gvk}
			out = append(out, by[gvk])
		}
		by[gvk].patterns = append(by[gvk].patterns, g)
	}
	return out, nil
}

// Read implements Reader: one observation per watched object in the
// cache, starting the watches first when they were not.
func (s *KubeSource) Read(ctx context.Context) observe.Result {
	if err := s.Start(ctx); err != nil {
		return observe.Result{Errors: []error{err}}
	}
	now := s.now
	var errs []error
	if s.Audit != nil {
		errs = s.Audit.Refresh()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var res observe.Result
	res.Errors = errs
	present := map[string]bool{}
	for _, w := range s.watches {
		items := w.informer.GetStore().List()
		sort.Slice(items, func(i, j int) bool {
			return unstructuredKey(
				items[i].(*unstructured.Unstructured),
			).String() <
				unstructuredKey(
					items[j].(*unstructured.Unstructured),
				).String()
		})
		for _, it := range items {
			u := it.(*unstructured.Unstructured)
			k := unstructuredKey(u)
			if !matchAny(w.patterns, k) {
				continue
			}
			present[string(u.GetUID())] = true
			t := now().UTC()
			o, err := s.observeObject(u, t)
			if err != nil {
				res.Errors = append(res.Errors, fmt.Errorf("cluster %s: %s: %w", s.Cluster, k, err))
				continue
			}
			if wait := s.unsettled(string(u.GetUID()), t); wait > 0 && s.Audit != nil &&
				o.Change.Attribution.Rank() < observe.AttributionAdmission.Rank() &&
				personChanged(o) {
				// Reported now, the change would be judged without its
				// author (and denied); the next cycle will have the event.
				res.Ignored++
				if s.OnChange != nil {
					time.AfterFunc(wait, func() { s.OnChange(k) })
				}
				continue
			}
			s.settleTransitions(string(u.GetUID()), o)
			res.Observations = append(res.Observations, o)
		}
	}
	// Deleted objects take what was remembered of them along.
	for uid := range s.applied {
		if !present[uid] {
			delete(s.applied, uid)
		}
	}
	if s.Transitions != nil {
		s.Transitions.Forget(s.Cluster, func(uid string) bool { return present[uid] })
	}
	return res
}

// personChanged reports whether a field of o is a live change by someone
// other than the GitOps controller.
func personChanged(o observe.Observation) bool {
	for _, f := range o.Fields {
		if f.Cause != observe.CauseForwardApply {
			return true
		}
	}
	return false
}

// observeObject builds the observation of one live object. s.mu is held.
func (s *KubeSource) observeObject(u *unstructured.Unstructured, now time.Time) (observe.Observation, error) {
	k := unstructuredKey(u)
	uid := string(u.GetUID())
	changes, err := observe.LiveChanges(u.Object, s.GitOpsManagers, s.IgnoreManagers)
	if err != nil {
		return observe.Observation{}, err
	}
	seen := s.applied[uid]
	if seen == nil {
		seen = map[string]time.Time{}
		s.applied[uid] = seen
	}
	fields := append([]observe.Field(nil), changes.Fields...)
	for _, f := range changes.Fields {
		seen[f.Path] = time.Time{}
	}
	reverted, kept := s.reverted(uid, changes, u.GetResourceVersion())
	for p := range reverted {
		if _, ok := seen[p]; !ok {
			// A change the watch saw but no Read did: the forward apply
			// wrote over it before this cycle.
			seen[p] = time.Time{}
		}
	}
	// A field changed live before and now written by a GitOps controller
	// was written by its forward apply: back to the old desired value (the
	// fix was reverted) or at the person's value (the write-back was
	// applied). Either is reported for a while, as the controller's, so an
	// open pull request can say it was reverted and a merged one can be
	// proven; then the object is simply converged again.
	for p, since := range seen {
		f, ok := changes.GitOps[p]
		switch {
		case !ok && !changes.Changed(p):
			delete(seen, p)
			continue
		case !ok:
			continue
		case since.IsZero():
			seen[p] = now
		case now.Sub(since) > ForwardApplyMemory:
			delete(seen, p)
			continue
		}
		// What the controller applied is its desired value: the planner
		// compares with the values files where the field is mapped, and
		// sees an unmapped one unchanged rather than as someone's drift.
		f.Cause = observe.CauseForwardApply
		f.Desired, f.HasDesired = f.Live, true
		if r, ok := reverted[p]; ok {
			// Within the transition window the person's value is what
			// the observation says was changed, with what is live now.
			f = r
		}
		fields = append(fields, f)
	}
	if len(seen) == 0 {
		delete(s.applied, uid)
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].Path < fields[j].Path })
	if fields == nil {
		fields = []observe.Field{}
	}
	o := observe.Observation{
		Source: observe.SourceKubernetes, Cluster: s.Cluster, ObservedAt: now, Object: k,
		ResourceVersion: u.GetResourceVersion(), UID: uid, Trust: observe.AttributionAuditLog,
		Change: observe.Change{Attribution: observe.AttributionUnknown, Claimed: observe.AttributionUnknown},
		Fields: fields,
		Origin: "cluster " + s.Cluster + " " + k.String(),
	}
	var events []observe.AuditEvent
	if s.Audit != nil {
		events = s.Audit.EventsOf(k)
	}
	var records []observe.AdmissionRecord
	if s.Admission != nil {
		records = s.Admission.RecordsOf(k)
	}
	records = append(records, kept...)
	return observe.AttributeLive(o, events, records, u.Object), nil
}

func unstructuredKey(u *unstructured.Unstructured) observe.ObjectKey {
	return observe.ObjectKey{
		APIVersion: u.GetAPIVersion(),
		Kind:       u.GetKind(),
		Namespace:  u.GetNamespace(),
		Name:       u.GetName(),
	}
}

// objectGlob is an object key pattern: four segments, * within one.
type objectGlob struct{ segs [4]string }

func parseObjectGlob(s string) (objectGlob, error) {
	k, err := observe.ParseObjectPattern(s)
	if err != nil {
		return objectGlob{}, err
	}
	var g objectGlob
	copy(g.segs[:], k.Segments())
	if g.segs[0] == "" || g.segs[1] == "" || strings.Contains(g.segs[0]+g.segs[1], "*") {
		return objectGlob{}, fmt.Errorf("object %q: apiVersion and Kind must be given literally to be watched", s)
	}
	if observe.IsSecretKind(g.segs[1]) {
		return objectGlob{}, fmt.Errorf("object %q: Secrets are never observed", s)
	}
	return g, nil
}

func (g objectGlob) match(k observe.ObjectKey) bool {
	for i, v := range []string{k.APIVersion, k.Kind, k.Namespace, k.Name} {
		if !globMatch(g.segs[i], v) {
			return false
		}
	}
	return true
}

func matchAny(gs []objectGlob, k observe.ObjectKey) bool {
	for _, g := range gs {
		if g.match(k) {
			return true
		}
	}
	return false
}

// commonNamespace is the namespace every pattern names literally, or all
// namespaces.
func commonNamespace(gs []objectGlob) string {
	ns := gs[0].segs[2]
	for _, g := range gs {
		if g.segs[2] != ns || strings.Contains(ns, "*") {
			return metav1.NamespaceAll
		}
	}
	return ns
}

// globMatch matches s against p, where * matches any run of characters.
func globMatch(p, s string) bool {
	star := strings.IndexByte(p, '*')
	if star < 0 {
		return p == s
	}
	if !strings.HasPrefix(s, p[:star]) {
		return false
	}
	rest := p[star+1:]
	for i := star; i <= len(s); i++ {
		if globMatch(rest, s[i:]) {
			return true
		}
	}
	return false
}
