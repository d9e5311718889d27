package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/backflow-dev/backflow/internal/leader"
	"github.com/backflow-dev/backflow/internal/observe/source"
	"github.com/backflow-dev/backflow/internal/server"
)

// ServeOptions are backflow serve's settings from its command line.
type ServeOptions struct {
	// LeaderElection, when set, lets this replica run cycles only while it
	// holds the Lease; nil runs them always (one replica).
	LeaderElection *LeaderElection
	// Version labels backflow_build_info (the binary's version).
	Version string
}

// LeaderElection is how a replica of backflow serve takes part in the
// election of the one that writes.
type LeaderElection struct {
	// Kubeconfig is the kubeconfig file of the Lease's cluster; empty uses
	// the pod's service account in a pod, else $KUBECONFIG or
	// ~/.kube/config, as the kube source does.
	Kubeconfig string
	// Client, when set, is used instead of one built from Kubeconfig.
	Client coordinationv1.LeasesGetter
	// Namespace and Name name the Lease; Identity names this replica.
	Namespace, Name, Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are as in leader.Config.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// DefaultLeaderElection is the election with its defaults, the identity
// read from the pod (POD_NAME, else the hostname, with a random suffix); an
// empty Namespace is the pod's (POD_NAMESPACE, else the service account's
// namespace file).
func DefaultLeaderElection() LeaderElection {
	name := os.Getenv("POD_NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	if name == "" {
		name = "backflow"
	}
	return LeaderElection{Name: leader.DefaultName, Identity: leader.Identity(name),
		LeaseDuration: leader.DefaultLeaseDuration, RenewDeadline: leader.DefaultRenewDeadline,
		RetryPeriod: leader.DefaultRetryPeriod}
}

// newElector builds the elector of le. onChange is told each change of
// leadership.
func newElector(le *LeaderElection, logger *slog.Logger, onChange func(bool)) (*leader.Elector, error) {
	ns := le.Namespace
	if ns == "" {
		var err error
		if ns, err = leader.Namespace(os.Getenv, leader.InClusterNamespaceFile); err != nil {
			return nil, fmt.Errorf("leader election: %w", err)
		}
	}
	client := le.Client
	if client == nil {
		kc := source.KubeConfig{Kubeconfig: le.Kubeconfig}
		if kc.Kubeconfig == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
			kc.InCluster = true
		}
		rc, err := source.RESTConfig(kc)
		if err != nil {
			return nil, fmt.Errorf("leader election: %w", err)
		}
		// No request outlives the time a leader has to renew.
		rc.Timeout = le.RenewDeadline
		c, err := coordinationv1.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("leader election: %w", err)
		}
		client = c
	}
	return leader.New(leader.Config{Client: client, Namespace: ns, Name: le.Name, Identity: le.Identity,
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		OnChange: onChange, Logger: logger})
}

// elect wires the elector of le to srv's metrics and cycles: a replica
// that starts leading cycles every repository at once; one that stops
// calls forget, to drop what it kept between cycles (another replica
// writes meanwhile, and this one hears of none of it). It returns the gate
// for the server and start, which runs the election until the returned
// stop is called (after the server has finished its cycles, so that the
// lease is released only then).
func elect(
	le *LeaderElection,
	metrics *server.Metrics,
	logger *slog.Logger,
	srv func() *server.Server,
	forget func(),
) (server.Gate, func() (stop func()), error) {
	e, err := newElector(le, logger, func(on bool) {
		metrics.Leading(on)
		if on {
			srv().RequestAll(server.Trigger{Kind: server.TriggerElected})
		} else {
			forget()
		}
	})
	if err != nil {
		return nil, nil, err
	}
	metrics.Leading(false)
	start := func() func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); e.Run(ctx) }()
		return func() { cancel(); <-done }
	}
	return e, start, nil
}
