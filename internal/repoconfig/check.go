package repoconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sort"

	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Report is what checking a repository found: a config and policy that could
// be read, every problem that makes the repository's setup invalid, and
// warnings about things that are valid but probably not yet as meant.
type Report struct {
	Config   *Config
	Policy   *policy.Policy
	Problems []error
	Warnings []string
}

// OK reports whether no problem was found.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// ErrNoRepository is returned by Check when repoDir is not a directory.
var ErrNoRepository = errors.New("not a repository checkout")

// ErrUnreadableFile is returned by Check when a file the config names (the
// policy, a values file) is there but cannot be read: a symlink, not a
// regular file, too large, or an I/O error. A file that is not there at all
// is a problem of the config instead.
var ErrUnreadableFile = errors.New("unreadable file")

// Check reads the checkout at repoDir the way backflow will: the repo config,
// the policy it names, and every unit's values files (which must exist and
// parse, with valuesRoot documents resolved). It warns where a policy entry
// that applies to a unit names a valuePath its values do not hold yet, and
// where the config and the policy disagree on role names. The error is for
// what stops the check from running at all: repoDir or the config file
// cannot be read, the policy or a values file is there but cannot be read
// (ErrUnreadableFile), or one of them is not YAML
// (errors.Is(err, yamlnode.ErrUnparseable) or policy.ErrUnparseable). A
// policy or values file that does not exist is a problem of the config.
func Check(repoDir string) (*Report, error) {
	if info, err := os.Stat(repoDir); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("%w: %s", ErrNoRepository, repoDir)
	}
	rep := &Report{}
	cfg, err := Load(repoDir)
	switch {
	case errors.Is(err, yamlnode.ErrUnparseable):
		return nil, err
	case errors.Is(err, ErrInvalid):
		rep.Problems = append(rep.Problems, eachPlace(err)...)
		return rep, nil
	case err != nil:
		return nil, err
	}
	rep.Config = cfg
	if data, err := ReadRepoFile(repoDir, cfg.Policy, policy.MaxSize); errors.Is(err, fs.ErrNotExist) {
		rep.Problems = append(rep.Problems, fmt.Errorf("%s: policy: %w", Path, err))
	} else if err != nil {
		return nil, fmt.Errorf("%w: %s: policy: %w", ErrUnreadableFile, Path, err)
	} else if p, err := policy.Parse(cfg.Policy, data); errors.Is(err, policy.ErrUnparseable) {
		return nil, err
	} else if err != nil {
		rep.Problems = append(rep.Problems, eachPlace(err)...)
	} else {
		rep.Policy = p
	}
	unitValues := make([][]map[string]any, len(cfg.Units))
	for i, u := range cfg.Units {
		for j, f := range u.ValuesFiles {
			data, err := ReadRepoFile(repoDir, f, MaxValuesSize)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				rep.Problems = append(rep.Problems, fmt.Errorf("%s: units[%d].valuesFiles[%d]: %s does not exist", Path, i, j, f))
				continue
			case err != nil:
				return nil, fmt.Errorf("%w: %s: units[%d].valuesFiles[%d]: %w", ErrUnreadableFile, Path, i, j, err)
			}
			v, err := Values(f, data, u.RootOf(f))
			if errors.Is(err, yamlnode.ErrUnparseable) {
				return nil, fmt.Errorf("%s: units[%d].valuesFiles[%d]: %w", Path, i, j, err)
			}
			if err != nil {
				rep.Problems = append(rep.Problems, fmt.Errorf("%s: units[%d].valuesFiles[%d]: %w", Path, i, j, err))
				continue
			}
			unitValues[i] = append(unitValues[i], v)
		}
	}
	if rep.Policy != nil {
		rep.Warnings = append(rep.Warnings, crossCheck(cfg, rep.Policy, unitValues)...)
	}
	return rep, nil
}

// eachPlace splits an error that lists several invalid places of one file
// into one problem per place, so that problems are counted as listed.
func eachPlace(err error) []error {
	var out []error
	var ce *Error
	var pe *policy.ValidationError
	switch {
	case errors.As(err, &ce) && len(ce.Errors) > 1:
		for _, fe := range ce.Errors {
			out = append(out, &Error{File: ce.File, Errors: []FieldError{fe}})
		}
	case errors.As(err, &pe) && len(pe.Errors) > 1:
		for _, fe := range pe.Errors {
			out = append(out, &policy.ValidationError{File: pe.File, Errors: []policy.FieldError{fe}})
		}
	default:
		out = append(out, err)
	}
	return out
}

// crossCheck warns about a policy and config that do not fit together yet.
func crossCheck(cfg *Config, p *policy.Policy, unitValues [][]map[string]any) []string {
	var warnings []string
	ruleRoles := map[string]bool{}
	for ri, r := range p.Rules {
		ruleRoles[r.Role] = true
		if _, ok := cfg.Roles[r.Role]; !ok {
			warnings = append(warnings, fmt.Sprintf("%s: spec.rules[%d]: role %s is not in %s roles, so nobody holds it", cfg.Policy, ri, r.Role, Path))
		}
		for ai, a := range r.MayAccept {
			for ui, u := range cfg.Units {
				if !accepts(a, u) || len(unitValues[ui]) < len(u.ValuesFiles) {
					continue // a unit whose values could not be read is a problem already
				}
				switch {
				case u.Documents() && a.ValuePath != "":
					warnings = append(warnings, fmt.Sprintf("%s: spec.rules[%d].mayAccept[%d]: names valuePath %s, but units[%d] (%s in %s) writes fields as themselves: the entry authorizes nothing there",
						cfg.Policy, ri, ai, a.ValuePath, ui, u.Name, u.Environment))
					continue
				case u.Documents():
					continue
				case a.ValuePath == "":
					warnings = append(warnings, fmt.Sprintf("%s: spec.rules[%d].mayAccept[%d]: names no valuePath, but units[%d] (%s in %s) reads values files: the entry authorizes nothing there",
						cfg.Policy, ri, ai, ui, u.Name, u.Environment))
					continue
				}
				if !inAny(unitValues[ui], a.ValuePath) {
					warnings = append(warnings, fmt.Sprintf("%s: spec.rules[%d].mayAccept[%d]: valuePath %s is not in the values of units[%d] (%s in %s) yet",
						cfg.Policy, ri, ai, a.ValuePath, ui, u.Name, u.Environment))
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Roles)) {
		if !ruleRoles[name] {
			warnings = append(warnings, fmt.Sprintf("%s: roles.%s: no rule of %s names this role", Path, name, cfg.Policy))
		}
	}
	sort.Strings(warnings)
	return warnings
}

// accepts reports whether a policy entry can apply to some object of the
// unit in the unit's environment.
func accepts(a policy.Accept, u Unit) bool {
	envOK := false
	for _, e := range a.Environments {
		if policy.Glob(e, u.Environment) {
			envOK = true
			break
		}
	}
	if !envOK {
		return false
	}
	for _, po := range a.Objects {
		for _, uo := range u.Objects {
			if objectsOverlap(po, uo) {
				return true
			}
		}
	}
	return false
}

func inAny(vals []map[string]any, path string) bool {
	for _, v := range vals {
		if _, ok := Lookup(v, path); ok {
			return true
		}
	}
	return false
}
