package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// FileReader reads one file of the repository, by its repository-relative
// path, at the commit the snapshot is of; limit is the size past which the
// file is refused (a reader that cannot tell may leave it to the parsers).
type FileReader func(path string, limit int64) ([]byte, error)

// ErrUnreadable marks a repo config or policy that could not be read.
var ErrUnreadable = errors.New("unreadable")

// ErrInvalid marks a repo config or policy that was read but is not valid.
var ErrInvalid = errors.New("invalid")

// ErrPaused is returned, with the snapshot's Config, when the repo config
// pauses the repository and the caller asked to stop there.
var ErrPaused = errors.New("the repository is paused")

// SnapshotError says which file of the snapshot failed and how: it wraps
// ErrUnreadable or ErrInvalid and the cause (a forge's or the file system's
// not-found error stays visible to errors.Is).
type SnapshotError struct {
	// File is the repository path of the repo config or the policy.
	File string
	// Kind is ErrUnreadable or ErrInvalid.
	Kind error
	// Err is the cause.
	Err error
}

// Error implements error: an unreadable file is named with the cause (once,
// when the cause already starts with it); an invalid one's cause already
// names the file and every problem.
func (e *SnapshotError) Error() string {
	msg := e.Err.Error()
	if !errors.Is(e.Kind, ErrUnreadable) {
		return msg
	}
	if strings.HasPrefix(msg, e.File+": ") {
		return "error reading " + msg
	}
	return fmt.Sprintf("error reading %s: %s", e.File, msg)
}

// Unwrap returns the kind and the cause.
func (e *SnapshotError) Unwrap() []error { return []error{e.Kind, e.Err} }

// ReadOptions tunes ReadSnapshot.
type ReadOptions struct {
	// Commit is recorded in the snapshot; empty for a working tree.
	Commit string
	// StopIfPaused ends the read after the repo config of a paused
	// repository (ErrPaused): a cycle that will write nothing need not
	// read the policy or the values.
	StopIfPaused bool
	// List lists the manifest files below a folder, as repository paths
	// (repoconfig.ListRepoDir for a working tree), for units whose
	// manifests name folders; without it such a folder cannot be read.
	List func(dir string) ([]string, error)
	// Kustomizer reads the inputs of kustomize units into the snapshot
	// and is the snapshot's Kustomizer.
	Kustomizer Kustomizer
	// Revisions reads the documents of units whose desired state is in a
	// revision store (a ConfigHub Unit), with their heads; without it,
	// those units fail closed.
	Revisions RevisionReader
}

// Read is a snapshot as read, with what could not be read of it.
type Read struct {
	// Snapshot is what the planner is given.
	Snapshot Snapshot
	// PolicySum is the hex SHA-256 of the policy's bytes.
	PolicySum string
	// FileErrors are the values files that could not be read, one error
	// each naming the file and its unit and wrapping the reader's: the
	// planner fails those units' decisions closed, the others are planned.
	FileErrors []error
}

// manifestFiles are the files u's manifests entries name: each file
// itself, and each folder's manifest files as list lists them.
func manifestFiles(u repoconfig.Unit, list func(string) ([]string, error)) ([]string, []error) {
	var files []string
	var errs []error
	for _, e := range u.Manifests {
		if repoconfig.IsManifestFile(e) {
			files = append(files, e)
			continue
		}
		if list == nil {
			errs = append(
				errs,
				fmt.Errorf(
					"listing manifests folder %s of unit %s (%s): this reader of the repository cannot list folders",
					e,
					u.Name,
					u.Environment,
				),
			)
			continue
		}
		got, err := list(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing manifests folder %s of unit %s (%s): %w", e, u.Name, u.Environment, err))
			continue
		}
		files = append(files, got...)
	}
	return files, errs
}

// ReadSnapshot reads what the planner needs from a repository through
// read: the repo config, the policy it names and every unit's values files.
// An unreadable or invalid repo config or policy is a *SnapshotError (the
// Read then holds what was read before it); a values file that cannot be
// read is in FileErrors, so one unit's broken file does not stop the others.
// Every reader of a repository (a checkout, the forge at a commit) goes
// through here, so they agree on what a snapshot is and how it fails.
func ReadSnapshot(read FileReader, opts ReadOptions) (Read, error) {
	var out Read
	data, err := read(repoconfig.Path, repoconfig.MaxSize)
	if err != nil {
		return out, &SnapshotError{File: repoconfig.Path, Kind: ErrUnreadable, Err: err}
	}
	cfg, err := repoconfig.Parse(repoconfig.Path, data)
	if err != nil {
		return out, &SnapshotError{File: repoconfig.Path, Kind: ErrInvalid, Err: err}
	}
	out.Snapshot = Snapshot{
		Config:     cfg,
		PolicyPath: path.Clean(cfg.Policy),
		Commit:     opts.Commit,
		Files:      map[string][]byte{},
		Kustomizer: opts.Kustomizer,
	}
	if cfg.Paused && opts.StopIfPaused {
		return out, ErrPaused
	}
	data, err = read(cfg.Policy, policy.MaxSize)
	if err != nil {
		return out, &SnapshotError{File: cfg.Policy, Kind: ErrUnreadable, Err: err}
	}
	pol, err := policy.Parse(cfg.Policy, data)
	if err != nil {
		return out, &SnapshotError{File: cfg.Policy, Kind: ErrInvalid, Err: err}
	}
	sum := sha256.Sum256(data)
	out.Snapshot.Policy, out.PolicySum = pol, hex.EncodeToString(sum[:])
	tried := map[string]bool{}
	for _, u := range cfg.Units {
		files, errs := manifestFiles(u, opts.List)
		out.FileErrors = append(out.FileErrors, errs...)
		if u.Kustomization != "" && opts.Kustomizer != nil {
			in, err := opts.Kustomizer.Inputs(
				func(p string) ([]byte, error) { return read(p, repoconfig.MaxValuesSize) },
				opts.List,
				u.Kustomization,
			)
			if err != nil {
				out.FileErrors = append(
					out.FileErrors,
					fmt.Errorf("reading kustomization %s of unit %s (%s): %w", u.Kustomization, u.Name, u.Environment, err),
				)
			}
			for _, p := range slices.Sorted(maps.Keys(in)) {
				out.Snapshot.Files[p] = in[p]
			}
		}
		if u.StoreRef() != nil {
			out.FileErrors = append(out.FileErrors, readRevisionStore(&out.Snapshot, u, opts.Revisions)...)
		}
		for _, f := range append(slices.Clone(u.ValuesFiles), files...) {
			if tried[f] {
				continue
			}
			tried[f] = true
			data, err := read(f, repoconfig.MaxValuesSize)
			if err != nil {
				out.FileErrors = append(
					out.FileErrors,
					fmt.Errorf("reading values file %s of unit %s (%s): %w", f, u.Name, u.Environment, err),
				)
				continue
			}
			out.Snapshot.Files[f] = data
		}
	}
	out.Snapshot.Receipts, out.Snapshot.ReceiptsError = readReceiptFiles(read, opts.List, cfg)
	return out, nil
}
