package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// placement is where one allowed field is written when the file Helm takes
// its value from is shared with other environments.
type placement struct {
	fs *fieldState
	pd *pending
	u  *repoconfig.Unit
	// file is the file index to write; -1 refuses the decision.
	file int
	// why is the receipt's and the refusal's explanation.
	why string
}

// placeShared keeps one environment's authority inside that environment:
// an allowed field whose value comes from a file that units of other
// environments also read is written as an override into the deciding
// unit's own, most specific values file, unless every environment reading
// the shared file allowed the same value at the same path in this plan. A
// unit whose most specific file is itself shared has nowhere to put the
// override: the decision is refused. Placements are all decided against
// the files as the decisions found them, then applied.
func (p *planner) placeShared() {
	readers := p.cfg.ReadersOf()
	var out []placement
	units := p.allowedUnits()
	// The allowed units by the values files they read, so that whether
	// every environment allowed a change looks at a file's readers only.
	allowedReaders := map[string][]*repoconfig.Unit{}
	for _, u := range units {
		for _, f := range u.ValuesFiles {
			if !onlyReader(readers[f], u.Environment) {
				allowedReaders[f] = append(allowedReaders[f], u)
			}
		}
	}
	for _, u := range units {
		uv := p.unitValues(u)
		own := len(uv.files) - 1
		for _, pd := range p.allowed[u] {
			for _, fs := range pd.fields {
				shared := uv.files[fs.file].path
				if onlyReader(readers[shared], u.Environment) {
					continue
				}
				others := without(readers[shared], u.Environment)
				if p.allAllow(allowedReaders[shared], shared, fs, others) {
					continue
				}
				pl := placement{fs: fs, pd: pd, u: u, file: own}
				ownPath := uv.files[own].path
				if o := without(readers[ownPath], u.Environment); fs.file == own || len(o) > 0 {
					pl.file = -1
					pl.why = fmt.Sprintf(
						"shared values file: %s is set in %s, which units of %s also read, and unit %s has no values file of its own to "+
							"hold an override; only the same change allowed for every environment reading it may edit it",
						fs.valuePath,
						ownPath,
						strings.Join(without(readers[ownPath], u.Environment), ", "),
						u.Name,
					)
				} else {
					pl.why = fmt.Sprintf("Shared values file: %s is defined in %s, which units of %s also read "+
						"and which %s's authority does not cover; it is not edited, and the new value is written as "+
						"an override to %s, so %s's desired state is unchanged.",
						fs.valuePath, shared, strings.Join(others, ", "), u.Environment, ownPath, strings.Join(others, ", "))
				}
				out = append(out, pl)
			}
		}
	}
	refused := map[*pending]string{}
	for _, pl := range out {
		if pl.file < 0 {
			if _, done := refused[pl.pd]; !done {
				refused[pl.pd] = pl.why
			}
			continue
		}
		pl.fs.file = pl.file
		pl.fs.placedWhy = pl.why
		d := &p.res.Decisions[pl.pd.index]
		for i := range d.Changes {
			if d.Changes[i].Field == pl.fs.f.Path {
				d.Changes[i].ValuesFile = p.unitValues(pl.u).files[pl.file].path
			}
		}
	}
	// In the units' order, so that the errors are always listed alike.
	for _, u := range units {
		pend := p.allowed[u]
		keep := pend[:0]
		for _, pd := range pend {
			if why, ok := refused[pd]; ok {
				p.failClosed(&p.res.Decisions[pd.index], why)
				continue
			}
			keep = append(keep, pd)
		}
		if len(keep) == 0 {
			delete(p.allowed, u)
			continue
		}
		p.allowed[u] = keep
	}
}

// allAllow reports whether every environment in envs has an allowed
// decision in this plan writing fs's value at fs's path into file, as Helm
// reads it there: the shared file may then change for all of them. allowed
// are the units with allowed decisions that read file.
func (p *planner) allAllow(allowed []*repoconfig.Unit, file string, fs *fieldState, envs []string) bool {
	for _, env := range envs {
		found := false
		for _, u := range allowed {
			if u.Environment != env {
				continue
			}
			pend := p.allowed[u]
			uv := p.unitValues(u)
			for _, pd := range pend {
				for _, other := range pd.fields {
					if other.valuePath == fs.valuePath && uv.files[other.file].path == file && values.Equal(other.live, fs.live) {
						found = true
					}
				}
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// allowedUnits are the units with allowed decisions, sorted by branch.
func (p *planner) allowedUnits() []*repoconfig.Unit {
	type byBranch struct {
		branch string
		u      *repoconfig.Unit
	}
	sorted := make([]byBranch, 0, len(p.allowed))
	for u := range p.allowed {
		sorted = append(sorted, byBranch{p.cfg.Branch(u), u})
	}
	slices.SortFunc(sorted, func(a, b byBranch) int { return strings.Compare(a.branch, b.branch) })
	out := make([]*repoconfig.Unit, len(sorted))
	for i, s := range sorted {
		out[i] = s.u
	}
	return out
}

// onlyReader reports that no environment but env reads a file envs read.
func onlyReader(envs []string, env string) bool {
	for _, e := range envs {
		if e != env {
			return false
		}
	}
	return true
}

func without(envs []string, env string) []string {
	return slices.DeleteFunc(slices.Clone(envs), func(e string) bool { return e == env })
}
