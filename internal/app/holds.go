package app

import (
	"context"
	"fmt"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
)

// HoldPort is the bot's hold port over the kube sources among sources,
// when the config turns holds on (hold.enabled); nil otherwise, and when
// no source watches a cluster itself: backflow then only reads.
func (c *Wiring) HoldPort(sources []bot.Source) bot.HoldPort {
	if !c.Hold.Enabled {
		return nil
	}
	p := kubeHolds{}
	for _, s := range sources {
		if k, ok := s.(*source.KubeSource); ok {
			p[k.Cluster] = k
		}
	}
	if len(p) == 0 {
		return nil
	}
	return p
}

// kubeHolds is the hold port over one kube source per cluster.
type kubeHolds map[string]*source.KubeSource

func (p kubeHolds) of(cluster string) (*source.KubeSource, error) {
	s, ok := p[cluster]
	if !ok {
		return nil, fmt.Errorf("no kube source watches cluster %s", cluster)
	}
	return s, nil
}

// Annotated implements bot.HoldPort.
func (p kubeHolds) Annotated(ctx context.Context) ([]bot.AnnotatedObject, error) {
	var out []bot.AnnotatedObject
	for cluster, s := range p {
		objs, err := s.HeldObjects(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out = append(out, bot.AnnotatedObject{Cluster: cluster, Object: o.Object, UID: o.UID, Annotations: o.Annotations})
		}
	}
	return out, nil
}

// AppliedRevision implements bot.HoldPort.
func (p kubeHolds) AppliedRevision(ctx context.Context, cluster, controller, applier string) (string, error) {
	s, err := p.of(cluster)
	if err != nil {
		return "", err
	}
	return s.AppliedRevision(ctx, controller, applier)
}

// PatchObject implements bot.HoldPort.
func (p kubeHolds) PatchObject(ctx context.Context, cluster string, object observe.ObjectKey, patch []byte) error {
	s, err := p.of(cluster)
	if err != nil {
		return err
	}
	return s.PatchObject(ctx, object, patch)
}

// PatchApplier implements bot.HoldPort.
func (p kubeHolds) PatchApplier(ctx context.Context, cluster, controller, applier string, patch []byte) error {
	s, err := p.of(cluster)
	if err != nil {
		return err
	}
	return s.PatchApplier(ctx, controller, applier, patch)
}
