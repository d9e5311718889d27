// Package leader elects one writer among backflow serve's replicas with a
// Kubernetes Lease (client-go's leaderelection and its LeaseLock). The
// replica holding the lease runs cycles; the others stand by until it is
// released (a graceful shutdown) or expires (a crash, a partition).
//
// An Elector is a server.Gate: its Term is the context of the current term
// of leadership, which ends the moment the lease is lost, so a cycle that
// runs under it stops writing at once.
package leader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// The defaults of Config, those of Kubernetes' own controllers.
const (
	DefaultName          = "backflow"
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Config is how a replica takes part in the election.
type Config struct {
	// Client reads and writes the Lease.
	Client coordinationv1.LeasesGetter
	// Namespace and Name name the Lease.
	Namespace, Name string
	// Identity names this replica in the Lease's holderIdentity; unique
	// among the replicas (see Identity).
	Identity string
	// LeaseDuration is how long a standby waits, from the last renewal it
	// saw, before it takes the lease over: the failover time after a crash.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it
	// gives up leading; shorter than LeaseDuration, so that it stops before
	// a standby may start.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between attempts to acquire or renew.
	RetryPeriod time.Duration
	// OnChange, when set, is told when this replica starts (true) and stops
	// (false) leading.
	OnChange func(leading bool)
	// Logger; nil discards.
	Logger *slog.Logger
}

// Elector runs the election for one replica. It is safe for concurrent use.
type Elector struct {
	cfg Config
	log *slog.Logger

	mu   sync.Mutex
	term context.Context // the current term; nil or ended when not leading
}

// New checks cfg and builds an elector; Run takes part in the election.
func New(cfg Config) (*Elector, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("leader election: no Kubernetes client")
	case cfg.Namespace == "":
		return nil, errors.New("leader election: no namespace for the Lease")
	case cfg.Name == "":
		return nil, errors.New("leader election: no name for the Lease")
	case cfg.Identity == "":
		return nil, errors.New("leader election: no identity")
	case cfg.LeaseDuration < time.Second:
		// The Lease stores whole seconds.
		return nil, fmt.Errorf("leader election: lease duration %s: must be at least 1s", cfg.LeaseDuration)
	case cfg.RenewDeadline <= 0 || cfg.RenewDeadline >= cfg.LeaseDuration:
		return nil, fmt.Errorf(
			"leader election: renew deadline %s: must be positive and shorter than the lease duration %s",
			cfg.RenewDeadline,
			cfg.LeaseDuration,
		)
	case cfg.RetryPeriod <= 0 || float64(cfg.RenewDeadline) <= leaderelection.JitterFactor*float64(cfg.RetryPeriod):
		return nil, fmt.Errorf(
			"leader election: retry period %s: must be positive and below the renew deadline %s / %.1f",
			cfg.RetryPeriod,
			cfg.RenewDeadline,
			leaderelection.JitterFactor,
		)
	}
	e := &Elector{cfg: cfg, log: cfg.Logger}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if _, err := e.elector(); err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	return e, nil
}

// Term implements server.Gate: the context of the current term, which ends
// when this replica stops leading; false when it does not lead.
func (e *Elector) Term() (context.Context, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.term == nil || e.term.Err() != nil {
		return nil, false
	}
	return e.term, true
}

// Identity is the replica's name (hostname unless set) with a random
// suffix, so that a restarted replica never mistakes the lease of its
// previous life for its own.
func (e *Elector) Identity() string { return e.cfg.Identity }

// Run takes part in the election until ctx ends: it stands by, leads when
// it acquires the lease, and stands by again when it loses it. When ctx
// ends it releases the lease if it holds it, so that a standby takes over
// at once: cancel ctx only once the cycles have finished.
func (e *Elector) Run(ctx context.Context) {
	for ctx.Err() == nil {
		le, err := e.elector()
		if err != nil { // checked by New: the config has not changed
			e.log.Error("leader election", "err", err)
			return
		}
		e.log.Info("standing by", "lease", e.cfg.Namespace+"/"+e.cfg.Name, "identity", e.cfg.Identity)
		le.Run(ctx)
	}
}

func (e *Elector) elector() (*leaderelection.LeaderElector, error) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.Name},
		Client:     e.cfg.Client,
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.cfg.Identity},
	}
	return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		Name:          e.cfg.Name,
		LeaseDuration: e.cfg.LeaseDuration, RenewDeadline: e.cfg.RenewDeadline, RetryPeriod: e.cfg.RetryPeriod,
		// The lease is released only when Run's context ends, which the
		// caller does after the cycles have finished.
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: e.started,
			OnStoppedLeading: e.stopped,
		},
	})
}

// started begins a term. It runs on a goroutine of its own, and may run
// after the term it was given has already ended.
func (e *Elector) started(term context.Context) {
	e.mu.Lock()
	if term.Err() != nil {
		e.mu.Unlock()
		return
	}
	e.term = term
	e.mu.Unlock()
	e.log.Info("leading", "lease", e.cfg.Namespace+"/"+e.cfg.Name, "identity", e.cfg.Identity)
	if e.cfg.OnChange != nil {
		e.cfg.OnChange(true)
	}
}

// stopped ends the term, if one began: client-go calls it after every
// election round, led or not. The term's context has ended already.
func (e *Elector) stopped() {
	e.mu.Lock()
	led := e.term != nil
	e.term = nil
	e.mu.Unlock()
	if !led {
		return
	}
	e.log.Info("stopped leading", "lease", e.cfg.Namespace+"/"+e.cfg.Name, "identity", e.cfg.Identity)
	if e.cfg.OnChange != nil {
		e.cfg.OnChange(false)
	}
}

// Identity returns name with a random suffix: the replica's identity in
// the Lease. name is typically the pod's name (POD_NAME) or the hostname.
func Identity(name string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand does not fail
	return name + "_" + hex.EncodeToString(b)
}

// InClusterNamespaceFile is where a pod reads its own namespace.
const InClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Namespace is the namespace of the Lease when none is given: POD_NAMESPACE
// (the Downward API), else the pod's own namespace from nsFile (normally
// InClusterNamespaceFile). getenv is os.Getenv in the command.
func Namespace(getenv func(string) string, nsFile string) (string, error) {
	if ns := strings.TrimSpace(getenv("POD_NAMESPACE")); ns != "" {
		return ns, nil
	}
	data, err := os.ReadFile(nsFile)
	if err == nil && strings.TrimSpace(string(data)) != "" {
		return strings.TrimSpace(string(data)), nil
	}
	return "", fmt.Errorf(
		"no namespace for the Lease: set --leader-elect-namespace or POD_NAMESPACE (outside a pod, %s is not readable)",
		nsFile,
	)
}
