package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/hold"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
)

// HoldPort is what the executor needs of the clusters to hold the forward
// controller off an accepted change: the watched objects that carry a
// hold's annotations, the applier's applied revision, and a JSON merge
// patch applied to an object or to an applier. The kube sources implement
// it; nil Options.Holds keeps backflow read-only on the clusters.
type HoldPort interface {
	// Annotated lists the watched objects carrying any of the hold's
	// annotations (hold.Annotation, the controllers' marks).
	Annotated(ctx context.Context) ([]AnnotatedObject, error)
	// AppliedRevision is the revision applied around the objects of the
	// applier (namespace/name) of controller on cluster: a Kustomization's
	// status.lastAppliedRevision, or, for a HelmRelease, that of the
	// Kustomization applying it once helm-controller has acted on it (an
	// error wrapping hold.ErrNotApplied before).
	AppliedRevision(ctx context.Context, cluster, controller, applier string) (string, error)
	// PatchObject applies patch to the object on cluster.
	PatchObject(ctx context.Context, cluster string, object observe.ObjectKey, patch []byte) error
	// PatchApplier applies patch to the applier (namespace/name) of
	// controller on cluster.
	PatchApplier(ctx context.Context, cluster, controller, applier string, patch []byte) error
}

// AnnotatedObject is a watched object's identity and annotations.
type AnnotatedObject struct {
	Cluster     string
	Object      observe.ObjectKey
	UID         string
	Annotations map[string]string
}

// liveHolds reads the holds on the watched objects, judged under the
// bot's commit key, with their appliers' applied revisions: what a
// restarted process carries on from.
func (b *Bot) liveHolds(ctx context.Context) ([]lifecycle.LiveHold, error) {
	objs, err := b.opts.Holds.Annotated(ctx)
	if err != nil {
		return nil, fmt.Errorf("error reading the holds: %w", err)
	}
	var out []lifecycle.LiveHold
	for _, o := range objs {
		rec, st := hold.Read(b.opts.CommitKey, o.Cluster, o.UID, o.Annotations)
		h := lifecycle.LiveHold{Cluster: o.Cluster, Object: o.Object, UID: o.UID, Record: rec, State: st}
		if st == hold.Sealed {
			rev, err := b.opts.Holds.AppliedRevision(ctx, o.Cluster, rec.Controller, rec.Applier)
			switch {
			case errors.Is(err, hold.ErrNotApplied):
				// Applied to the applier, not yet acted on by its
				// controller: the hold stays, and the next cycle reads again.
				b.log.Info("applied revision not yet acted on", "cluster", o.Cluster, "applier", rec.Applier, "reason", err)
			case err != nil:
				// Without the applier's revision the merge is not known to
				// be applied: the hold stays (until its maximum).
				b.log.Warn("applier not read", "cluster", o.Cluster, "applier", rec.Applier, "error", err)
			}
			h.Applied = rev
		}
		out = append(out, h)
	}
	return out, nil
}

// hold carries out a Hold or a Release: the object's patch, then, for a
// release that asks it, the applier's reconcile request. A hold whose
// object changed since it was decided is refused by the API server (the
// patch names the resourceVersion) and decided again next cycle.
func (x *executor) hold(e lifecycle.Effect) bool {
	a := e.Hold
	if x.holds == nil || a == nil {
		return x.fail(e.Branch, fmt.Errorf("no hold port to apply a %q effect", e.Kind))
	}
	if err := x.holds.PatchObject(x.ctx, a.Cluster, a.Object, a.Patch); err != nil {
		return x.fail(e.Branch, fmt.Errorf("error applying the %s of %s on %s: %w", e.Kind, a.Object, a.Cluster, err))
	}
	// Counted once the object is patched: a reconcile request that fails
	// after a release does not put the hold back.
	h := &x.rep.Holds
	switch {
	case e.Kind == lifecycle.Hold:
		h.InPlace++
		h.Held = append(h.Held, max(x.now().Sub(a.ChangedAt), 0))
	case a.Cause != hold.CauseMarkRemoved && a.Cause != hold.CauseUnserved:
		// A hold whose mark was removed was no longer in place; an unserved
		// one was not this repository's.
		h.InPlace--
		fallthrough
	default:
		h.Released = append(h.Released, a.Cause)
	}
	if a.ReconcilePatch != nil {
		if err := x.holds.PatchApplier(x.ctx, a.Cluster, a.Controller, a.Applier, a.ReconcilePatch); err != nil {
			return x.fail(e.Branch, fmt.Errorf("released the hold on %s, but asking %s to reconcile failed: %w",
				a.Object, a.Applier, err))
		}
	}
	x.act(e, e.Reason)
	return true
}

// countHolds starts the cycle's count of the holds in place: the sealed
// holds of repo on the live objects, as read before the cycle decides.
func countHolds(rep *RepoReport, repo string, live []lifecycle.LiveHold) {
	rep.Holds.Read = true
	for _, h := range live {
		if h.State == hold.Sealed && h.Record.Repo == repo {
			rep.Holds.InPlace++
		}
	}
}

// reverts are the forward controller's reverts of a person's change that
// the plan's newest observations record on objects no sealed hold of repo
// was on: the at-risk window that ended in a revert.
func reverts(res *plan.Result, repo string, live []lifecycle.LiveHold) []RevertReport {
	type heldObject struct {
		cluster string
		object  observe.ObjectKey
	}
	held := map[heldObject]bool{}
	for _, h := range live {
		if h.State == hold.Sealed && h.Record.Repo == repo {
			held[heldObject{h.Cluster, h.Object}] = true
		}
	}
	var out []RevertReport
	for _, seen := range res.Observed {
		o := seen.Newest
		if o == nil || held[heldObject{o.Cluster, seen.Object}] {
			continue
		}
		for _, f := range o.Fields {
			if r := f.Reverted; r != nil && !r.ChangedAt.IsZero() {
				out = append(out, RevertReport{
					Key:    strings.Join([]string{o.Cluster, seen.Object.String(), f.Path, r.ChangedVersion, r.Version}, "\x00"),
					Window: max(o.ObservedAt.Sub(r.ChangedAt), 0),
				})
			}
		}
	}
	return out
}

// mergesApplied says, of each sealed hold of the repository whose pull
// request merged and whose applier applied another revision of the
// default branch than the merge commit, whether that revision is a later
// one: the forge compares the merge with it. A comparison that fails
// leaves the hold to be decided again next cycle (until its maximum).
func (rc *repoCycle) mergesApplied(prs []forge.PullRequest, live []lifecycle.LiveHold) {
	for i := range live {
		h := &live[i]
		if h.State != hold.Sealed || h.Record.Repo != rc.in.Repo || h.Applied == "" {
			continue
		}
		merge, applied := rc.in.MergeOf(prs, h.Record), hold.AppliedRevision(h.Applied)
		if merge == "" || applied == "" || applied == merge {
			continue
		}
		if branch, _, named := strings.Cut(h.Applied, "@"); named && strings.TrimPrefix(branch, "refs/heads/") !=
			rc.repo.DefaultBranch {
			continue // a revision of another branch: not the default branch's history
		}
		later, err := rc.b.opts.Forge.Contains(rc.ctx, rc.repo, merge, applied)
		if err != nil {
			rc.log.Warn("applied revision not compared with the merge", "applier", h.Record.Applier,
				"applied", h.Applied, "merge", merge, "error", err)
			continue
		}
		h.AppliedIncludesMerge = later
	}
}
