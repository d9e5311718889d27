// Package hold is what a hold is on a live object, in backflow's terms:
// the forward controller's own hands-off mark (Flux kustomize-controller's
// kustomize.toolkit.fluxcd.io/reconcile: disabled, helm-controller's
// helm.toolkit.fluxcd.io/driftDetection: disabled) placed beside a sealed
// backflow.dev/hold annotation that records what is held, for which change
// and pull request, and since when; the patches that place and release
// them, touching nothing but those annotations; how a hold read back from a
// live object is judged (sealed by backflow, forged, or a person's mark);
// and when a hold is due for release. For Argo CD, which has no per-object
// hold, it builds from the policy the Application's ignoreDifferences items
// that keep self-heal off the accepted fields.
//
// It is pure: it decides and builds, and an adapter applies what it
// builds. It must not import clients of any kind.
package hold

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The annotations a hold places and reads.
const (
	// Annotation is backflow's sealed record of the hold.
	Annotation = "backflow.dev/hold"
	// KustomizeReconcile is Flux kustomize-controller's per-object switch.
	KustomizeReconcile = "kustomize.toolkit.fluxcd.io/reconcile"
	// HelmDriftDetection is Flux helm-controller's per-object drift
	// detection switch.
	HelmDriftDetection = "helm.toolkit.fluxcd.io/driftDetection"
	// Disabled is the value both switches take while held.
	Disabled = "disabled"
	// RequestedAt asks a Flux object to reconcile now.
	RequestedAt = "reconcile.fluxcd.io/requestedAt"
)

// Controllers, as the repository config names them.
const (
	FluxKustomize = "flux-kustomize"
	FluxHelm      = "flux-helm"
)

// Mark is the annotation that is controller's hands-off mark.
func Mark(controller string) (string, error) { return markOf(controller) }

// markOf is the annotation that is the controller's hands-off mark.
func markOf(controller string) (string, error) {
	switch controller {
	case FluxKustomize:
		return KustomizeReconcile, nil
	case FluxHelm:
		return HelmDriftDetection, nil
	}
	return "", fmt.Errorf("hold: controller %q has no per-object hold (want %s or %s)",
		controller, FluxKustomize, FluxHelm)
}

// Record is what a hold says of itself, sealed in the Annotation.
type Record struct {
	V int `json:"v"`
	// Repo ("owner/name"), Branch and Fingerprint are the proposal the
	// held change waits in; PR its pull request's number, 0 when the hold
	// was placed before the pull request was opened.
	Repo        string `json:"repo"`
	PR          int    `json:"pr"`
	Branch      string `json:"branch"`
	Fingerprint string `json:"fingerprint"`
	// Cluster, Object (apiVersion|Kind|namespace|name) and UID name the
	// held object: a record copied to another object is not authentic.
	Cluster string `json:"cluster"`
	Object  string `json:"object"`
	UID     string `json:"uid"`
	// Fields are the accepted fields held.
	Fields []string `json:"fields"`
	// Controller is whose mark was placed; Applier the Flux object
	// (namespace/name) whose applied revision releases it.
	Controller string `json:"controller"`
	Applier    string `json:"applier"`
	// Since is when it was placed; Until when it is released at the latest.
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// MAC authenticates the rest.
	MAC string `json:"mac,omitempty"`
}

const recordVersion = 1

// key derives the hold key from the commit key (itself derived from the
// App's private key), as the pull request marker's is.
func key(commitKey []byte) []byte {
	k, err := hkdf.Key(sha256.New, commitKey, nil, "backflow hold key v1", 32)
	if err != nil {
		panic(err) // 32 bytes of SHA-256 output cannot be too long
	}
	return k
}

func mac(commitKey []byte, r Record) string {
	r.MAC = ""
	data, _ := json.Marshal(r) // plain data: encoding cannot fail
	h := hmac.New(sha256.New, key(commitKey))
	h.Write([]byte("backflow/hold/v1\x00"))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// Seal returns the annotation value of r, authenticated under commitKey.
func Seal(commitKey []byte, r Record) (string, error) {
	if len(commitKey) == 0 {
		return "", errors.New("hold: no commit key to seal with")
	}
	if r.UID == "" || r.Object == "" || r.Cluster == "" || r.Repo == "" || r.Branch == "" || r.Fingerprint == "" ||
		len(r.Fields) == 0 {
		return "", fmt.Errorf("hold: record of %s misses the object's uid, cluster, the repository, the proposal's "+
			"branch and fingerprint or the fields", r.Object)
	}
	if _, err := markOf(r.Controller); err != nil {
		return "", err
	}
	r.V = recordVersion
	r.Fields = slices.Sorted(slices.Values(r.Fields))
	r.MAC = mac(commitKey, r)
	data, _ := json.Marshal(r)
	return string(data), nil
}

// State is what a live object's annotations say of a hold.
type State int

const (
	// None is no hold, no mark.
	None State = iota
	// Sealed is backflow's authentic hold, with the controller's mark.
	Sealed
	// Forged is a backflow.dev/hold annotation that is not authentic for
	// this object (edited, copied, or written by someone else): never
	// trusted, never released.
	Forged
	// Unsealed is the controller's mark without backflow's hold: a person's
	// (or another tool's) mark, left alone and reported.
	Unsealed
	// Unmarked is backflow's authentic record whose controller mark is gone
	// (a person removed it): the hold no longer holds, and backflow's
	// record is released.
	Unmarked
)

func (s State) String() string {
	return [...]string{None: "none", Sealed: "sealed", Forged: "forged", Unsealed: "unsealed", Unmarked: "unmarked"}[s]
}

// Read judges the annotations of the live object (cluster, uid) as a hold:
// the record when it is authentic, and the state. A record is authentic
// only when its MAC verifies under commitKey and it names this very object.
func Read(commitKey []byte, cluster, uid string, annotations map[string]string) (Record, State) {
	raw, has := annotations[Annotation]
	marked := annotations[KustomizeReconcile] == Disabled || annotations[HelmDriftDetection] == Disabled
	if !has {
		if marked {
			return Record{}, Unsealed
		}
		return Record{}, None
	}
	var r Record
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || len(commitKey) == 0 || r.V != recordVersion || r.MAC == "" ||
		!hmac.Equal([]byte(r.MAC), []byte(mac(commitKey, r))) || r.Cluster != cluster || r.UID != uid {
		return Record{}, Forged
	}
	mark, err := markOf(r.Controller)
	if err != nil {
		return Record{}, Forged
	}
	if annotations[mark] != Disabled {
		return r, Unmarked
	}
	return r, Sealed
}

// Place is the JSON merge patch that places the hold r (sealed as value)
// on the object at resourceVersion rv: the controller's mark and the
// record, and nothing else. The resourceVersion makes the API server
// refuse it when the object changed since it was read.
func Place(r Record, value, rv string) ([]byte, error) {
	mark, err := markOf(r.Controller)
	if err != nil {
		return nil, err
	}
	if rv == "" {
		return nil, fmt.Errorf("hold: %s: placing a hold needs the resourceVersion it was decided on", r.Object)
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": rv,
		"annotations":     map[string]any{mark: Disabled, Annotation: value},
	}})
}

// Release is the JSON merge patch that removes the sealed hold r: its
// record and the controller's mark, and nothing else. Only a hold Read
// found Sealed or Unmarked is ever released.
func Release(r Record, st State) ([]byte, error) {
	if st != Sealed && st != Unmarked {
		return nil, fmt.Errorf("hold: %s: a %s hold is never released by backflow", r.Object, st)
	}
	mark, err := markOf(r.Controller)
	if err != nil {
		return nil, err
	}
	ann := map[string]any{Annotation: nil}
	if st == Sealed {
		ann[mark] = nil
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
}

// Reconcile is the JSON merge patch that asks a Flux object to reconcile
// now.
func Reconcile(now time.Time) []byte {
	data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		RequestedAt: now.UTC().Format(time.RFC3339Nano)}}})
	return data
}

// PullState is what a hold's release depends on, read each cycle.
type PullState struct {
	// Open, Merged: the pull request's state; neither is closed unmerged.
	Open, Merged bool
	// MergeCommit is the merge's SHA.
	MergeCommit string
	// Applied is the applier's status.lastAppliedRevision (Flux writes
	// "<branch>@sha1:<sha>"); AppliedIncludesMerge says that revision is
	// the merge commit or a later one on the default branch (the caller
	// asks the forge).
	Applied              string
	AppliedIncludesMerge bool
	// Found says the pull request was found at all.
	Found bool
	// Contested, when set, says who else changed a held field since the
	// hold was placed: the change is re-planned, and the hold released.
	Contested string
	// Expired, when set, says the temporary acceptance the held change
	// merged as has expired (its restoring write-back is due, made, or
	// void): the change it protected is over, so the hold is released and
	// the applier asked to reconcile.
	Expired string
	// Unheld, when set, says why the hold is no longer wanted although its
	// proposal may still be: the repository's configuration no longer opts
	// its unit into holds, or has no such unit any more; Unserved, when
	// set, says the repository it names is provably not served by this
	// installation any more. Either releases the hold, and the applier is
	// asked to reconcile.
	Unheld, Unserved string
}

// ErrNotApplied says the applier has applied a revision to the objects it
// reconciles, but its controller has not yet acted on it: a HelmRelease
// whose Kustomization applied the commit, before helm-controller upgraded
// the release. The hold is kept; the next cycle reads again.
var ErrNotApplied = errors.New("not yet applied")

// AppliedRevision is the SHA a Flux lastAppliedRevision names.
func AppliedRevision(rev string) string {
	if _, sha, ok := strings.Cut(rev, "@sha1:"); ok {
		return sha
	}
	if _, sha, ok := strings.Cut(rev, ":"); ok {
		return sha
	}
	return rev
}

// Why a hold is released, in a word: the label of the releases metric.
const (
	CauseApplied     = "applied"      // the merged revision (or a later one) is applied
	CauseClosed      = "closed"       // the pull request was closed without merge
	CauseGone        = "gone"         // no pull request proposes the change any more
	CauseContested   = "contested"    // someone else changed a held field
	CauseMaximum     = "maximum"      // the maximum hold time passed
	CauseMarkRemoved = "mark-removed" // the controller's mark was removed by someone else
	CauseExpired     = "expired"      // the temporary acceptance it merged as has expired
	CauseUnheld      = "unheld"       // its unit no longer opts into holds, or was removed from the config
	CauseUnserved    = "unserved"     // its repository is no longer served by this installation
)

// Causes are every release cause, in the order Due weighs them.
var Causes = []string{
	CauseMarkRemoved, CauseUnserved, CauseUnheld, CauseGone, CauseContested, CauseApplied, CauseClosed, CauseExpired,
	CauseMaximum,
}

// Decision says what to do with a sealed hold.
type Decision struct {
	Release bool
	// Reconcile says to ask the applier to reconcile after the release.
	Reconcile bool
	// Cause is why a hold is released (one of Causes); empty when kept.
	Cause string
	// Reason says why, for the pull request and the log.
	Reason string
}

// Due decides a sealed hold r at now: released once the merged revision
// is applied around the object (then the applier is asked to reconcile),
// when its repository is no longer served or its unit no longer opts in,
// when the pull request was closed without merge or is gone, when the
// temporary acceptance it merged as has expired, or at its Until; else
// kept.
func Due(r Record, st State, p PullState, now time.Time) Decision {
	release := func(cause string, reconcile bool, format string, a ...any) Decision {
		return Decision{Release: true, Reconcile: reconcile, Cause: cause, Reason: fmt.Sprintf(format, a...)}
	}
	keep := func(format string, a ...any) Decision { return Decision{Reason: fmt.Sprintf(format, a...)} }
	switch {
	case st == Unmarked:
		return release(CauseMarkRemoved, false, "the %s mark on %s was removed by someone else: the hold no longer holds",
			r.Controller, r.Object)
	case st != Sealed:
		return keep("a %s hold is not backflow's: left alone", st)
	case p.Unserved != "":
		return release(CauseUnserved, true, "%s is no longer served: %s", r.Repo, p.Unserved)
	case p.Unheld != "":
		return release(CauseUnheld, true, "%s no longer holds: %s", r.Branch, p.Unheld)
	case !p.Found:
		return release(CauseGone, true, "no pull request of %s proposes it any more", r.Branch)
	case p.Contested != "":
		return release(CauseContested, false, "%s changed a held field of %s: re-planned", p.Contested, r.Object)
	case p.Merged && (p.AppliedIncludesMerge || AppliedRevision(p.Applied) == p.MergeCommit):
		return release(CauseApplied, true, "the merge %s of %s is applied by %s (%s)", short(p.MergeCommit), r.Branch,
			r.Applier, p.Applied)
	case !p.Open && !p.Merged:
		return release(CauseClosed, true,
			"the pull request of %s was closed without merge: the controller reverts the change", r.Branch)
	case p.Merged && p.Expired != "":
		return release(CauseExpired, true, "the change it protected has expired: %s", p.Expired)
	case !now.Before(r.Until):
		return release(CauseMaximum, true, "held since %s, the maximum hold time (until %s) has passed",
			r.Since.UTC().Format(time.RFC3339), r.Until.UTC().Format(time.RFC3339))
	case p.Merged:
		return keep("merged %s; %s has applied %s, not the merge yet", short(p.MergeCommit), r.Applier, orNone(p.Applied))
	}
	return keep("the pull request of %s is open; held until %s", r.Branch, r.Until.UTC().Format(time.RFC3339))
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}
