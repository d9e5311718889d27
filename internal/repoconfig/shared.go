package repoconfig

import (
	"cmp"
	"slices"
)

// SharedFile is a values file that units of more than one environment read.
type SharedFile struct {
	Path string
	// Environments are the environments whose units read it, sorted.
	Environments []string
	// Readers are "<unit> (<environment>)" for each unit reading it, in
	// config order.
	Readers []string
}

// SharedFiles lists, sorted by path, the values files that units of more
// than one environment read: a write-back for one environment edits such a
// file only when every environment reading it authorized the same change.
func (c *Config) SharedFiles() []SharedFile {
	byPath := map[string]*SharedFile{}
	for _, u := range c.Units {
		for _, f := range u.ValuesFiles {
			s := byPath[f]
			if s == nil {
				s = &SharedFile{Path: f}
				byPath[f] = s
			}
			if !slices.Contains(s.Environments, u.Environment) {
				s.Environments = append(s.Environments, u.Environment)
			}
			s.Readers = append(s.Readers, u.Name+" ("+u.Environment+")")
		}
	}
	var out []SharedFile
	for _, s := range byPath {
		if len(s.Environments) > 1 {
			slices.Sort(s.Environments)
			out = append(out, *s)
		}
	}
	slices.SortFunc(out, func(a, b SharedFile) int { return cmp.Compare(a.Path, b.Path) })
	return out
}

// ReadersOf maps every values file to the environments whose units read
// it, sorted.
func (c *Config) ReadersOf() map[string][]string {
	out := map[string][]string{}
	for _, u := range c.Units {
		for _, f := range u.ValuesFiles {
			if !slices.Contains(out[f], u.Environment) {
				out[f] = append(out[f], u.Environment)
			}
		}
	}
	for _, envs := range out {
		slices.Sort(envs)
	}
	return out
}
