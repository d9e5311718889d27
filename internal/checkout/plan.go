package checkout

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// ErrNoObservations marks an observations path that does not exist.
var ErrNoObservations = errors.New("no such file or directory")

// UnreadableObservationsError lists the observation inputs, or documents of
// them, that are not YAML or JSON at all: nothing is planned from inputs
// that could not be read, since what they held is unknown.
type UnreadableObservationsError struct{ Errs []error }

func (e *UnreadableObservationsError) Error() string {
	return listed("unreadable observations", e.Errs)
}

// UnreadableValuesError lists the values files that are there but could not
// be read, or are not YAML at all: a plan of the checkout would decide
// against values nobody can tell, so none is made. A values file that does
// not exist is one of the plan's errors instead.
type UnreadableValuesError struct{ Errs []error }

func (e *UnreadableValuesError) Error() string {
	return listed("unreadable values files", e.Errs)
}

// listed is title and each of errs on its own indented line.
func listed(title string, errs []error) string {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return title + ":\n  " + strings.Join(msgs, "\n  ")
}

// unreadableValues returns the *UnreadableValuesError for what the read
// checkout holds, or nil.
func unreadableValues(read plan.Read) error {
	var errs []error
	for _, e := range read.FileErrors {
		if !errors.Is(e, fs.ErrNotExist) {
			errs = append(errs, e)
		}
	}
	cfg := read.Snapshot.Config
	for _, f := range slices.Sorted(maps.Keys(read.Snapshot.Files)) {
		if _, err := repoconfig.Values(f, read.Snapshot.Files[f], cfg.RootOf(f)); errors.Is(err, yamlnode.ErrUnparseable) {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &UnreadableValuesError{Errs: errs}
}

// PlanCheckout is backflow plan: it reads the checkout at repo and the
// observation files or folders at paths (believed no higher than ceiling)
// and plans them at now. What could not be read of the values files or the
// observations leads the result's errors, and the affected decisions fail
// closed. The error is an unreadable or invalid repo config or policy (a
// *plan.SnapshotError), an *UnreadableValuesError, an observations path
// that does not exist (ErrNoObservations), or an
// *UnreadableObservationsError.
func PlanCheckout(repo string, paths []string, ceiling observe.Attribution, now time.Time) (plan.Result, error) {
	return PlanCheckoutWith(repo, paths, ceiling, now, Options{})
}

// PlanCheckoutWith is PlanCheckout reading the checkout with opts.
func PlanCheckoutWith(repo string, paths []string, ceiling observe.Attribution, now time.Time,
	opts Options) (plan.Result, error) {
	snap, err := readCheckout(repo, opts)
	if err != nil {
		return plan.Result{}, err
	}
	if err := unreadableValues(snap); err != nil {
		return plan.Result{}, err
	}
	var obs observe.Result
	for _, p := range paths {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return plan.Result{}, fmt.Errorf("observations %s: %w", p, ErrNoObservations)
		}
		obs.Merge(source.LoadPath(p, observe.Options{Ceiling: ceiling}))
	}
	var unreadable []error
	for _, e := range obs.Errors {
		if errors.Is(e, observe.ErrUnreadable) {
			unreadable = append(unreadable, e)
		}
	}
	if len(unreadable) > 0 {
		return plan.Result{}, &UnreadableObservationsError{Errs: unreadable}
	}
	// What was seen of an object before it was deleted describes nothing.
	obs.ApplyForgets()
	res := plan.Plan(obs.Observations, obs.Triggers, snap.Snapshot, now)
	res.Notices = obs.Notices
	var errs []string
	for _, e := range append(snap.FileErrors, obs.Errors...) {
		errs = append(errs, e.Error())
	}
	res.Errors = append(errs, res.Errors...)
	return res, nil
}
