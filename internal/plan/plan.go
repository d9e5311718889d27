package plan

import (
	"cmp"
	"slices"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/witness"
)

// Snapshot is what the repository says at one commit of its default branch.
type Snapshot struct {
	// Config is the parsed .github/backflow.yaml.
	Config *repoconfig.Config
	// Policy is the parsed policy that Config names.
	Policy *policy.Policy
	// PolicyPath is the policy's repository-relative path: the policyRef
	// every receipt names.
	PolicyPath string
	// Commit is the default-branch commit the snapshot was read at; empty
	// when the repository was read from a working tree.
	Commit string
	// Files holds the raw bytes of every values file the units name, keyed
	// by repository-relative path. A file missing here could not be read.
	Files map[string][]byte
	// Renderer renders the charts of units that name a chart path, for the
	// render witness. When it is nil, such a unit writes nothing back.
	Renderer witness.Renderer
	// Store is where the write-backs go and how they are proposed; nil is
	// PullRequests.
	Store Store
	// Kustomizer builds kustomize units; when it is nil, such a unit
	// writes nothing back.
	Kustomizer Kustomizer
	// Receipts are the receipts merged on the default branch (under
	// receipts.dir), by path: what is due of temporary acceptances is read
	// from them. ReceiptsError says why they could not be listed.
	Receipts      map[string][]byte
	ReceiptsError string
	// Voided are the temporary acceptances already said void, by receipt
	// path, each with the expiresAt it was said void at (the lifecycle
	// reads them from the notes of the pull requests that carried them):
	// such an expiry stays void, even when desired holds the accepted
	// values again.
	Voided map[string]string
	// Heads hold what was read of each document in a revision store
	// besides its bytes (which are in Files under its StoreRef's Path).
	Heads map[repoconfig.StoreRef]Head
}

// Outcome is what the planner decided for one observed object.
type Outcome string

// The outcomes, in their order of precedence.
const (
	// Unmapped: no unit claims the object in its environment.
	Unmapped Outcome = "unmapped"
	// Noop: no changed field remains once fields equal to desired, ignored
	// fields and fields written by ignored managers are dropped.
	Noop Outcome = "noop"
	// Stale: the observer compared against a desired value the default
	// branch no longer holds; the object must be looked at again.
	Stale Outcome = "stale"
	// Deny: unauthorized drift.
	Deny Outcome = "deny"
	// Allow: an authorized live change, accepted back with a receipt.
	Allow Outcome = "allow"
)

// Decision is the planner's answer for one observed object in one
// environment. Its reasons and its changes travel together, so a partial
// explanation still reaches the reader.
type Decision struct {
	// Unit is the unit that renders the object; empty when unmapped.
	Unit string
	// Environment is the object's environment; empty when the cluster is
	// in no environment.
	Environment string
	// Object is the observed object's key.
	Object  observe.ObjectKey
	Outcome Outcome
	// AutoMerge says an allowed write-back qualifies for merging without
	// review: every accepted field's policy entry has autoMerge: true and
	// the actor is attributed by the audit log.
	AutoMerge bool
	// WriteBack is the branch an allowed change is written to; empty when
	// nothing is written (any other outcome, or an allow that is only
	// reported because the repository is observe-only or paused).
	WriteBack string
	// Reported says an allow is only reported: the repository is in
	// observe-only mode or paused, so nothing is written.
	Reported bool
	// Reasons explain the outcome; a deny lists every reason.
	Reasons []string
	// Changes are the changed fields that remain after dropping fields equal
	// to desired, ignored fields and fields written by ignored managers,
	// sorted by field path. Values of Secrets are redacted.
	Changes []Change
	// Actor and Role are who made the change and the role that authorizes
	// it (Role is set on allows only).
	Actor, Role string
	// Attribution is how far the actor is believed (the deciding
	// observation's, after its source's ceiling): a proof of the change
	// needs an observation trusted as far.
	Attribution observe.Attribution
	// Receipt is the allow's receipt, verified against the snapshot's policy.
	Receipt *receipt.Receipt
	// ReceiptPath is where the receipt is committed, under receipts.dir.
	ReceiptPath string
	// ObservedAt is when the deciding observation read the object.
	ObservedAt time.Time
}

// Change is one changed field of an observed object.
type Change struct {
	// Object is the changed object's key.
	Object observe.ObjectKey
	// Field is the Kubernetes field path.
	Field string
	// ValuePath is the values path the field maps to; empty when no policy
	// entry maps the field for this object.
	ValuePath string
	// ValuesFile is the values file a write-back would edit; empty when the
	// value path or the unit is unknown.
	ValuesFile string
	// WrittenFile and WrittenPath are, for an expired acceptance of a unit
	// of manifests or a kustomization, the file and path it was written
	// at (its receipt's), where the restore writes; empty otherwise.
	WrittenFile, WrittenPath string
	// From is the desired value (the repository's, or the observer's when
	// the repository's is unknown); To the live value. Nil is null.
	From, To any
	// Authorized says the policy lets the actor's role accept the field.
	Authorized bool
}

// WriteBack is one unit's write-back: one branch and pull request carrying
// every allowed change of the unit.
type WriteBack struct {
	Unit, Environment string
	// Branch is <branchPrefix><environment>/<unit>.
	Branch string
	// AutoMerge is true when every decision of the write-back qualifies.
	AutoMerge bool
	// Objects are the allowed objects, sorted.
	Objects []observe.ObjectKey
	// Files are the edited values files with their new bytes, sorted by path.
	Files []File
	// Receipts are the receipt files with their YAML bytes, sorted by path.
	Receipts []File
	// Revision is the edited document of the unit's revision store (a
	// ConfigHub Unit), nil for a unit of the repository: the pull request
	// carries the receipts, and the revision is written once it merges.
	Revision *Revision
}

// File is a repository path and the bytes to commit there.
type File struct {
	Path string
	Data []byte
}

// Result is everything one planning pass decided.
type Result struct {
	// Decisions, one per observed object and environment, sorted by unit,
	// then object, then environment.
	Decisions []Decision
	// WriteBacks, one per unit with an allowed change, sorted by branch.
	// Empty when the repository is observe-only or paused.
	WriteBacks []WriteBack
	// Triggers ask for objects to be looked at again, sorted by object,
	// cluster and time.
	Triggers []observe.Trigger
	// Notices are observers' events worth reporting that ask for no
	// decision (an object taken out of its controller's hands); the caller
	// sets them.
	Notices []observe.Notice
	// Errors are problems that kept a decision from being made as it
	// should have been; the affected decisions fail closed (deny).
	Errors []string
	// Observed are, per object and environment, the observations the plan
	// was made from, in the order the objects were first seen.
	Observed []Observed
	// Desired are every unit's merged desired values, in the repo
	// config's order.
	Desired []Desired
	// Expiries are the temporary acceptances on the default branch, by
	// receipt path, each with its state at the plan's time.
	Expiries []Expiry
	// Restored are the temporary acceptances a merged restoring receipt
	// has ended (state Restored), by its path, each as the acceptance it
	// ended: Changes' From the value restored, To the accepted one. They
	// are done, so reports leave them out; the lifecycle releases a hold
	// still protecting one.
	Restored []Expiry
}

// Options tune how a plan is made, never what it decides: the Result is
// the same whatever they are.
type Options struct {
	// Readings keeps Helm's reading of values documents (and what the
	// values editor remembers with it) by their exact bytes. A caller that
	// plans again and again (the bot, at every cycle) keeps one for its
	// life, so a values file that has not changed since the last plan is
	// not read again. Nil gives the plan a fresh one of its own.
	Readings *values.Readings
	// Workers bounds the goroutines that read units' values and build
	// their write-backs (edit, verification, receipt). Zero means
	// GOMAXPROCS; one plans on the caller's goroutine alone.
	Workers int
}

// Plan decides every observed object, with a fresh values.Readings and
// GOMAXPROCS workers; see PlanWith.
func Plan(observations []observe.Observation, triggers []observe.Trigger, snap Snapshot, now time.Time) Result {
	return PlanWith(observations, triggers, snap, now, Options{})
}

// PlanWith decides every observed object. Observations of one object in
// one environment are reduced to the newest (each cluster's newest is kept
// for the cluster-agreement check). now is the time receipts record as the
// write-back's.
//
//nolint:revive // the options form of Plan, read beside it at the call; plan.With would not say it plans
func PlanWith(
	observations []observe.Observation,
	triggers []observe.Trigger,
	snap Snapshot,
	now time.Time,
	opts Options,
) Result {
	p := newPlanner(snap, now, opts)
	if snap.Config != nil {
		var refused []string
		observations, refused = inBounds(observations, snap.Config, now)
		p.res.Errors = append(p.res.Errors, refused...)
		_, _, p.freshness = snap.Config.Bounds()
	}
	p.readReceipts()
	groups := p.group(observations)
	p.observed(groups, observations)
	p.readUnits(groups)
	// Objects are decided concurrently, each into its own place; what they
	// add to the plan is added in their order, as deciding them in turn
	// would.
	if len(groups) > 0 {
		p.res.Decisions = make([]Decision, len(groups))
	}
	outs := make([]decided, len(groups))
	each(len(groups), p.workers, func(i int) {
		p.res.Decisions[i] = p.decide(groups[i], i, &outs[i])
	})
	for _, out := range outs {
		p.res.Errors = append(p.res.Errors, out.errs...)
		if out.pd != nil {
			p.allowed[out.unit] = append(p.allowed[out.unit], out.pd)
		}
	}
	p.writeBacks()
	p.expiries()
	p.desired()
	slices.SortStableFunc(p.res.Decisions, func(a, b Decision) int {
		return cmp.Or(cmp.Compare(a.Unit, b.Unit), a.Object.Compare(b.Object), cmp.Compare(a.Environment, b.Environment))
	})
	p.res.Triggers = slices.Clone(triggers)
	slices.SortStableFunc(p.res.Triggers, func(a, b observe.Trigger) int {
		return cmp.Or(
			a.Object.Compare(b.Object),
			cmp.Compare(a.Cluster, b.Cluster),
			a.At.Compare(b.At),
		)
	})
	if p.res.Triggers == nil {
		p.res.Triggers = []observe.Trigger{}
	}
	if p.res.Errors == nil {
		p.res.Errors = []string{}
	}
	return p.res
}
