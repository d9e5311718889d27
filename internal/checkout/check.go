package checkout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Report is what checking a repository found: a config and policy that could
// be read, every problem that makes the repository's setup invalid, and
// warnings about things that are valid but probably not yet as meant.
type Report struct {
	Config   *repoconfig.Config
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
	cfg, err := repoconfig.Load(repoDir)
	switch {
	case errors.Is(err, yamlnode.ErrUnparseable):
		return nil, err
	case errors.Is(err, repoconfig.ErrInvalid):
		rep.Problems = append(rep.Problems, repoconfig.Places(err)...)
		return rep, nil
	case err != nil:
		return nil, err
	}
	rep.Config = cfg
	if data, err := repoconfig.ReadRepoFile(repoDir, cfg.Policy, policy.MaxSize); errors.Is(err, fs.ErrNotExist) {
		rep.Problems = append(rep.Problems, fmt.Errorf("%s: policy: %w", repoconfig.Path, err))
	} else if err != nil {
		return nil, fmt.Errorf("%w: %s: policy: %w", ErrUnreadableFile, repoconfig.Path, err)
	} else if p, err := policy.Parse(cfg.Policy, data); errors.Is(err, policy.ErrUnparseable) {
		return nil, err
	} else if err != nil {
		rep.Problems = append(rep.Problems, repoconfig.Places(err)...)
	} else {
		rep.Policy = p
	}
	unitValues := make([][]map[string]any, len(cfg.Units))
	for i, u := range cfg.Units {
		for j, f := range u.ValuesFiles {
			data, err := repoconfig.ReadRepoFile(repoDir, f, repoconfig.MaxValuesSize)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				rep.Problems = append(rep.Problems,
					fmt.Errorf("%s: units[%d].valuesFiles[%d]: %s does not exist", repoconfig.Path, i, j, f))
				continue
			case err != nil:
				return nil, fmt.Errorf("%w: %s: units[%d].valuesFiles[%d]: %w", ErrUnreadableFile, repoconfig.Path, i, j, err)
			}
			v, err := repoconfig.Values(f, data, u.RootOf(f))
			if errors.Is(err, yamlnode.ErrUnparseable) {
				return nil, fmt.Errorf("%s: units[%d].valuesFiles[%d]: %w", repoconfig.Path, i, j, err)
			}
			if err != nil {
				rep.Problems = append(rep.Problems, fmt.Errorf("%s: units[%d].valuesFiles[%d]: %w", repoconfig.Path, i, j, err))
				continue
			}
			unitValues[i] = append(unitValues[i], v)
		}
	}
	if rep.Policy != nil {
		rep.Warnings = append(rep.Warnings, repoconfig.CrossCheck(cfg, rep.Policy, unitValues)...)
	}
	return rep, nil
}
