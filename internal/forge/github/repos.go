package github

import (
	"context"
	"fmt"
	"sort"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/forge"
)

const perPage = 100

// Repositories implements forge.Forge: every repository each installation
// of the App can see, filtered by the allowlist, sorted by name.
func (a *Adapter) Repositories(ctx context.Context) ([]forge.Repo, error) {
	var insts []*gh.Installation
	for page := 1; page != 0; {
		list, resp, err := a.app.ListInstallations(ctx, &gh.ListOptions{Page: page, PerPage: perPage})
		if err != nil {
			return nil, mapErr(err, "listing the app's installations")
		}
		insts = append(insts, list...)
		page = resp.NextPage
	}
	var out []forge.Repo
	for _, inst := range insts {
		if inst.SuspendedAt != nil {
			// A suspended installation answers 403 for its repositories:
			// it is skipped, and the other installations still cycle.
			a.cfg.Logger.Warn("skipping a suspended installation", "installation", inst.GetID(),
				"account", inst.GetAccount().GetLogin())
			continue
		}
		in := a.installation(inst.GetID())
		seen := 0
		for page := 1; page != 0; {
			list, resp, err := in.api.ListInstallationRepos(ctx, &gh.ListOptions{Page: page, PerPage: perPage})
			if err != nil {
				return nil, mapErr(err, "listing the repositories of installation %d", inst.GetID())
			}
			for _, r := range list.Repositories {
				seen++
				full := strings.ToLower(r.GetFullName())
				a.mu.Lock()
				a.repoInst[full] = inst.GetID()
				a.mu.Unlock()
				if a.allow != nil && !a.allow[full] {
					continue
				}
				out = append(out, toRepo(r))
			}
			page = resp.NextPage
		}
		// Every repository's reads are worth keeping for a conditional
		// read at its next cycle.
		in.cache.resize(seen)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FullName() < out[j].FullName() })
	return out, nil
}

func toRepo(r *gh.Repository) forge.Repo {
	return forge.Repo{Owner: r.GetOwner().GetLogin(), Name: r.GetName(), DefaultBranch: r.GetDefaultBranch()}
}

// GetRepo implements forge.Forge.
func (a *Adapter) GetRepo(ctx context.Context, owner, name string) (forge.Repo, error) {
	in, err := a.forRepo(ctx, owner, name)
	if err != nil {
		return forge.Repo{}, err
	}
	r, _, err := in.api.GetRepo(ctx, owner, name)
	if err != nil {
		return forge.Repo{}, mapErr(err, "reading repository %s/%s", owner, name)
	}
	return toRepo(r), nil
}

// LatestEvent returns the id of the newest entry of repo's events API, ""
// when it has none. It changes whenever something happens in the
// repository (a push, a pull request or an issue opened, edited or closed,
// a comment), so state cached about a repository is revalidated with this
// one request, which GitHub answers 304 (free) when nothing happened.
func (a *Adapter) LatestEvent(ctx context.Context, repo forge.Repo) (string, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return "", err
	}
	events, _, err := in.api.ListRepositoryEvents(ctx, repo.Owner, repo.Name, &gh.ListOptions{PerPage: 1})
	if err != nil {
		return "", mapErr(err, "reading the latest event of %s", repo)
	}
	if len(events) == 0 {
		return "", nil
	}
	return events[0].GetID(), nil
}

// ReadFile implements forge.Forge by the file's tree entry at a commit
// SHA and its blob: a symlink (mode 120000) or submodule anywhere on the
// path is refused, naming it, never followed (tree.go).
func (a *Adapter) ReadFile(ctx context.Context, repo forge.Repo, sha, path string) ([]byte, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("reading %s at %s in %s", path, short(sha), repo)
	it, err := a.lookup(ctx, in, repo, sha, path)
	if err != nil {
		return nil, fmt.Errorf("error %s: %w", where, err)
	}
	b, _, err := in.api.GetBlobRaw(ctx, repo.Owner, repo.Name, it.sha)
	if err != nil {
		return nil, mapErr(err, "%s", where)
	}
	return b, nil
}

// ListFiles implements forge.Forge with one recursive tree read.
func (a *Adapter) ListFiles(ctx context.Context, repo forge.Repo, sha, dir string) ([]string, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("listing %s at %s in %s", dir, short(sha), repo)
	tree, _, err := in.api.GetTree(ctx, repo.Owner, repo.Name, sha, true)
	if err != nil {
		return nil, mapErr(err, "%s", where)
	}
	if tree.GetTruncated() {
		return nil, fmt.Errorf("error %s: the tree is too large to list in one response: %w", where, forge.ErrInvalid)
	}
	dir = strings.Trim(dir, "/")
	var out []string
	found := dir == ""
	for _, e := range tree.Entries {
		p := e.GetPath()
		if dir != "" && p != dir && !strings.HasPrefix(p, dir+"/") {
			continue
		}
		found = true
		// Regular files only: 120000 is a symlink, 160000 a submodule.
		if e.GetType() == "blob" && (e.GetMode() == "100644" || e.GetMode() == "100755") {
			out = append(out, p)
		}
	}
	if !found {
		return nil, fmt.Errorf("error %s: %w", where, forge.ErrNotFound)
	}
	sort.Strings(out)
	return out, nil
}

// CommitsSince implements forge.Forge with the compare API.
func (a *Adapter) CommitsSince(ctx context.Context, repo forge.Repo, base, head string) ([]forge.Commit, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return nil, err
	}
	var out []forge.Commit
	for page := 1; page != 0; {
		cmp, resp, err := in.api.CompareCommits(
			ctx,
			repo.Owner,
			repo.Name,
			base,
			head,
			&gh.ListOptions{Page: page, PerPage: perPage},
		)
		if err != nil {
			return nil, mapErr(err, "comparing %s...%s in %s", short(base), short(head), repo)
		}
		for _, c := range cmp.Commits {
			gc := c.GetCommit()
			fc := forge.Commit{SHA: c.GetSHA(), Message: gc.GetMessage(),
				Author:    forge.Author{Name: gc.GetAuthor().GetName(), Email: gc.GetAuthor().GetEmail()},
				Committer: forge.Author{Name: gc.GetCommitter().GetName(), Email: gc.GetCommitter().GetEmail()},
				Verified:  gc.GetVerification().GetVerified()}
			for _, p := range c.Parents {
				fc.Parents = append(fc.Parents, p.GetSHA())
			}
			out = append(out, fc)
		}
		page = resp.NextPage
	}
	return out, nil
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
