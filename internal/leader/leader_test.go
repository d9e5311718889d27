package leader

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Short terms, so that a takeover after a lost lease takes about a second
// and the tests wait on events, never on fixed sleeps.
const (
	testLease = time.Second
	testRenew = 500 * time.Millisecond
	testRetry = 100 * time.Millisecond
)

// replica is one elector and the changes it reported, in order.
type replica struct {
	e       *Elector
	changes chan bool
	stop    context.CancelFunc
	done    chan struct{}
}

// events is the order in which replicas started and stopped leading.
type events struct {
	mu  sync.Mutex
	log []string
}

func (ev *events) add(s string) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.log = append(ev.log, s)
}

func (ev *events) String() string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return strings.Join(ev.log, " ")
}

// newClientset is a fake API server for Leases. (NewSimpleClientset: the
// newer NewClientset builds a field manager from the OpenAPI models, which
// costs seconds under -race and nothing the Lease needs.)
func newClientset() *fake.Clientset { return fake.NewSimpleClientset() }

func startReplica(t *testing.T, cs *fake.Clientset, name string, ev *events) *replica {
	t.Helper()
	r := &replica{changes: make(chan bool, 16), done: make(chan struct{})}
	e, err := New(Config{Client: cs.CoordinationV1(), Namespace: "backflow", Name: DefaultName, Identity: Identity(name),
		LeaseDuration: testLease, RenewDeadline: testRenew, RetryPeriod: testRetry,
		OnChange: func(on bool) {
			if on {
				ev.add(name + "+")
			} else {
				ev.add(name + "-")
			}
			r.changes <- on
		}})
	if err != nil {
		t.Fatal(err)
	}
	r.e = e
	ctx, stop := context.WithCancel(context.Background())
	r.stop = stop
	go func() { defer close(r.done); e.Run(ctx) }()
	t.Cleanup(func() { stop(); <-r.done })
	return r
}

// next waits for the replica's next change, failing after a bound far
// above the lease (a hang, not a timing assertion).
func (r *replica) next(t *testing.T) bool {
	t.Helper()
	select {
	case on := <-r.changes:
		return on
	case <-time.After(20 * testLease):
		t.Fatalf("%s: no change of leadership", r.e.Identity())
		return false
	}
}

func (r *replica) leading() bool {
	_, ok := r.e.Term()
	return ok
}

func holder(t *testing.T, cs *fake.Clientset) string {
	t.Helper()
	l, err := cs.CoordinationV1().Leases("backflow").Get(context.Background(), DefaultName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func TestOneLeaderAndAQuickHandOverOnShutdown(t *testing.T) {
	cs := newClientset()
	ev := &events{}
	a := startReplica(t, cs, "a", ev)
	if !a.next(t) {
		t.Fatal("a's first change is not leading")
	}
	term, ok := a.e.Term()
	if !ok {
		t.Fatal("a reported leading but has no term")
	}
	b := startReplica(t, cs, "b", ev)
	if b.leading() {
		t.Fatal("b leads while a holds the lease")
	}
	if h := holder(t, cs); h != a.e.Identity() {
		t.Fatalf("the Lease is held by %q, want %q", h, a.e.Identity())
	}

	// A graceful shutdown: a's context ends (after its cycles), its term
	// ends and it releases the lease, so b takes over without waiting for
	// the lease to expire.
	stopped := time.Now()
	a.stop()
	<-a.done
	if term.Err() == nil {
		t.Error("a's term did not end with its shutdown")
	}
	if a.next(t) {
		t.Fatal("a's change after the shutdown is not a stop")
	}
	if !b.next(t) {
		t.Fatal("b's first change is not leading")
	}
	t.Logf("b took over %s after a's shutdown released the lease (lease %s)", time.Since(stopped).Round(time.Millisecond), testLease)
	if h := holder(t, cs); h != b.e.Identity() {
		t.Errorf("the Lease is held by %q after the hand-over, want %q", h, b.e.Identity())
	}
	if got := ev.String(); got != "a+ a- b+" {
		t.Errorf("leadership changes %q, want a+ a- b+ (never two leaders)", got)
	}
}

func TestALostLeaseEndsTheTermBeforeAnotherReplicaLeads(t *testing.T) {
	cs := newClientset()
	// A partition: a's writes to the API server fail, as if it were cut
	// off (its renewals, and its release once it gives up, which writes no
	// holder); b's still go through.
	// lastRenewal is when a last wrote the Lease as its holder.
	var cutOff atomic.Pointer[string]
	var lastRenewal atomic.Int64
	cs.PrependReactor("*", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		w, ok := action.(interface{ GetObject() runtime.Object }) // a create or an update
		if !ok {
			return false, nil, nil
		}
		l, ok := w.GetObject().(*coordinationv1.Lease)
		if !ok {
			return false, nil, nil
		}
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		if id := cutOff.Load(); id != nil && (holder == *id || holder == "") {
			return true, nil, errors.New("connection refused")
		}
		if strings.HasPrefix(holder, "a_") {
			lastRenewal.Store(time.Now().UnixNano())
		}
		return false, nil, nil
	})
	ev := &events{}
	a := startReplica(t, cs, "a", ev)
	if !a.next(t) {
		t.Fatal("a's first change is not leading")
	}
	term, _ := a.e.Term()
	b := startReplica(t, cs, "b", ev)
	id := a.e.Identity()

	cutOff.Store(&id)
	// a gives up after its renew deadline and its term ends, so its
	// running cycle is cancelled ...
	if a.next(t) {
		t.Fatal("a's change after the partition is not a stop")
	}
	select {
	case <-term.Done():
	default:
		t.Fatal("a stopped leading but its term goes on")
	}
	// ... before b may take the lease over, when it expires.
	if !b.next(t) {
		t.Fatal("b's first change is not leading")
	}
	// b may take over only once the lease of a's last renewal has run out.
	if d := time.Since(time.Unix(0, lastRenewal.Load())); lastRenewal.Load() == 0 || d < testLease {
		t.Errorf("b took over %s after a's last renewal, before its lease of %s could expire", d, testLease)
	}
	if got := ev.String(); got != "a+ a- b+" {
		t.Errorf("leadership changes %q, want a+ a- b+ (a stops before b starts)", got)
	}
	if a.leading() {
		t.Error("a leads again while b holds the lease")
	}
}

func TestNewRefusesAnUnsafeConfig(t *testing.T) {
	good := Config{Client: newClientset().CoordinationV1(), Namespace: "ns", Name: "backflow", Identity: "a_1",
		LeaseDuration: DefaultLeaseDuration, RenewDeadline: DefaultRenewDeadline, RetryPeriod: DefaultRetryPeriod}
	if _, err := New(good); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no client", func(c *Config) { c.Client = nil }, "no Kubernetes client"},
		{"no namespace", func(c *Config) { c.Namespace = "" }, "no namespace"},
		{"no name", func(c *Config) { c.Name = "" }, "no name"},
		{"no identity", func(c *Config) { c.Identity = "" }, "no identity"},
		{"sub-second lease", func(c *Config) { c.LeaseDuration = 500 * time.Millisecond }, "at least 1s"},                              // the Lease keeps whole seconds
		{"renew not shorter than the lease", func(c *Config) { c.RenewDeadline = c.LeaseDuration }, "shorter than the lease duration"}, // the old leader would still write when a new one starts
		{"retry too close to the renew deadline", func(c *Config) { c.RetryPeriod = c.RenewDeadline }, "below the renew deadline"},     // no second attempt to renew
		{"no retry period", func(c *Config) { c.RetryPeriod = 0 }, "retry period"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			_, err := New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestNamespaceAndIdentity(t *testing.T) {
	dir := t.TempDir()
	nsFile := filepath.Join(dir, "namespace")
	if err := os.WriteFile(nsFile, []byte("backflow-system\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	if ns, err := Namespace(getenv, nsFile); err != nil || ns != "backflow-system" {
		t.Errorf("from the pod's file: %q, %v", ns, err)
	}
	env["POD_NAMESPACE"] = "from-downward-api"
	if ns, err := Namespace(getenv, nsFile); err != nil || ns != "from-downward-api" {
		t.Errorf("POD_NAMESPACE first: %q, %v", ns, err)
	}
	delete(env, "POD_NAMESPACE")
	if _, err := Namespace(getenv, filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "--leader-elect-namespace") {
		t.Errorf("outside a pod: %v, want an error naming the flag", err)
	}

	a, b := Identity("backflow-0"), Identity("backflow-0")
	if !strings.HasPrefix(a, "backflow-0_") || a == b {
		t.Errorf("identities %q and %q: want the name and a suffix that differs between lives", a, b)
	}
}
