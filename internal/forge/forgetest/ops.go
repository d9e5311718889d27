package forgetest

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/backflow-dev/backflow/internal/forge"
)

// The effects recorded, one per successful write:
//
//	acme/gitops:branch:create:NAME        acme/gitops:branch:update:NAME[:force]
//	acme/gitops:branch:delete:NAME        acme/gitops:commit:BRANCH:PATH,PATH
//	acme/gitops#12:open:HEAD              acme/gitops#12:edit:title,body
//	acme/gitops#12:close                  acme/gitops#12:comment
//	acme/gitops#12:comment-edit:ID        acme/gitops#12:label:NAME
//	acme/gitops#12:unlabel:NAME           acme/gitops#12:reviewers:alice,team:sre
//	acme/gitops:check:NAME:CONCLUSION     acme/gitops:check-update:NAME:CONCLUSION
//	acme/gitops#12:auto-merge:METHOD      acme/gitops#12:merge:METHOD
//	acme/gitops#12:merged:auto            acme/gitops#13:issue:open
//	acme/gitops#13:issue:edit:title,body,state

// App implements forge.Forge.
func (f *Fake) App(ctx context.Context) (forge.App, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("App", false); err != nil {
		return forge.App{}, err
	}
	return f.app, nil
}

// Repositories implements forge.Forge: every repository, in creation order.
func (f *Fake) Repositories(ctx context.Context) ([]forge.Repo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("Repositories", false); err != nil {
		return nil, err
	}
	var out []forge.Repo
	for _, full := range f.order {
		out = append(out, f.repos[full].info)
	}
	return out, nil
}

// GetRepo implements forge.Forge.
func (f *Fake) GetRepo(ctx context.Context, owner, name string) (forge.Repo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("GetRepo", false, forge.Repo{Owner: owner, Name: name})
	if err != nil {
		return forge.Repo{}, err
	}
	return r.info, nil
}

func (f *Fake) commitAt(r *repo, sha string) (*commit, error) {
	c, ok := r.commits[sha]
	if !ok {
		return nil, fmt.Errorf("commit %s in %s: %w", sha, r.info, forge.ErrNotFound)
	}
	return c, nil
}

// ReadFile implements forge.Forge.
func (f *Fake) ReadFile(ctx context.Context, rp forge.Repo, sha, p string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("ReadFile", false, rp)
	if err != nil {
		return nil, err
	}
	c, err := f.commitAt(r, sha)
	if err != nil {
		return nil, err
	}
	b, ok := c.files[p]
	if !ok {
		for q := range c.files {
			if strings.HasPrefix(q, p+"/") {
				return nil, fmt.Errorf("%s at %s in %s: %w", p, short(sha), rp, forge.ErrNotRegularFile)
			}
		}
		return nil, fmt.Errorf("%s at %s in %s: %w", p, short(sha), rp, forge.ErrNotFound)
	}
	return slices.Clone(b), nil
}

// ListFiles implements forge.Forge.
func (f *Fake) ListFiles(ctx context.Context, rp forge.Repo, sha, dir string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("ListFiles", false, rp)
	if err != nil {
		return nil, err
	}
	c, err := f.commitAt(r, sha)
	if err != nil {
		return nil, err
	}
	dir = strings.Trim(dir, "/")
	var out []string
	for p := range c.files {
		if dir == "" || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	if len(out) == 0 && dir != "" {
		return nil, fmt.Errorf("%s at %s in %s: %w", dir, short(sha), rp, forge.ErrNotFound)
	}
	sort.Strings(out)
	return out, nil
}

// BranchHead implements forge.Forge.
func (f *Fake) BranchHead(ctx context.Context, rp forge.Repo, branch string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("BranchHead", false, rp)
	if err != nil {
		return "", err
	}
	sha, ok := r.branches[branch]
	if !ok {
		return "", fmt.Errorf("branch %s in %s: %w", branch, rp, forge.ErrNotFound)
	}
	return sha, nil
}

// CreateBranch implements forge.Forge.
func (f *Fake) CreateBranch(ctx context.Context, rp forge.Repo, branch, sha string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("CreateBranch", true, rp)
	if err != nil {
		return err
	}
	if _, err := f.commitAt(r, sha); err != nil {
		return fmt.Errorf("creating branch %s in %s: %w", branch, rp, forge.ErrInvalid)
	}
	if _, ok := r.branches[branch]; ok {
		return fmt.Errorf("creating branch %s in %s: %w", branch, rp, forge.ErrConflict)
	}
	f.moveBranch(r, branch, sha)
	f.record("%s:branch:create:%s", rp, branch)
	return nil
}

// casBranch checks a ref update as GitHub and git receive-pack do.
func (f *Fake) casBranch(r *repo, branch, expectedOld, newSHA string, force bool) error {
	cur, ok := r.branches[branch]
	switch {
	case !ok:
		return fmt.Errorf("branch %s in %s: %w", branch, r.info, forge.ErrNotFound)
	case cur != expectedOld:
		return fmt.Errorf("branch %s in %s is at %s, not %s: %w", branch, r.info, short(cur), short(expectedOld), forge.ErrConflict)
	case !force && !f.isAncestor(r, cur, newSHA):
		return fmt.Errorf("branch %s in %s: update is not a fast forward: %w", branch, r.info, forge.ErrConflict)
	}
	return nil
}

// UpdateBranch implements forge.Forge.
func (f *Fake) UpdateBranch(ctx context.Context, rp forge.Repo, branch, expectedOld, newSHA string, force bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("UpdateBranch", true, rp)
	if err != nil {
		return err
	}
	if _, err := f.commitAt(r, newSHA); err != nil {
		return fmt.Errorf("updating branch %s in %s: %w", branch, rp, forge.ErrInvalid)
	}
	if err := f.casBranch(r, branch, expectedOld, newSHA, force); err != nil {
		return fmt.Errorf("updating branch: %w", err)
	}
	f.moveBranch(r, branch, newSHA)
	f.record("%s:branch:update:%s%s", rp, branch, forceTag(force))
	return nil
}

func forceTag(force bool) string {
	if force {
		return ":force"
	}
	return ""
}

// DeleteBranch implements forge.Forge.
func (f *Fake) DeleteBranch(ctx context.Context, rp forge.Repo, branch, expectedSHA string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("DeleteBranch", true, rp)
	if err != nil {
		return err
	}
	cur, ok := r.branches[branch]
	switch {
	case !ok:
		return fmt.Errorf("deleting branch %s in %s: %w", branch, rp, forge.ErrNotFound)
	case branch == rp.DefaultBranch || branch == r.info.DefaultBranch:
		return fmt.Errorf("deleting branch %s in %s: the default branch: %w", branch, rp, forge.ErrInvalid)
	case expectedSHA != "" && cur != expectedSHA:
		return fmt.Errorf("deleting branch %s in %s: at %s, not %s: %w", branch, rp, short(cur), short(expectedSHA), forge.ErrConflict)
	}
	f.moveBranch(r, branch, "")
	f.record("%s:branch:delete:%s", rp, branch)
	return nil
}

// Commit implements forge.Forge with the same compare-and-swap as the
// adapter; both methods behave alike here, except that API commits are
// marked verified as GitHub signs them.
func (f *Fake) Commit(ctx context.Context, req forge.CommitRequest) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("Commit", true, req.Repo)
	if err != nil {
		return "", err
	}
	where := fmt.Sprintf("committing to %s in %s", req.Branch, req.Repo)
	base, err := f.commitAt(r, req.BaseSHA)
	if err != nil {
		return "", fmt.Errorf("%s: base: %w", where, err)
	}
	if err := checkRequest(req); err != nil {
		return "", fmt.Errorf("%s: %w", where, err)
	}
	if req.ExpectedHead == "" {
		if _, ok := r.branches[req.Branch]; ok {
			return "", fmt.Errorf("%s: branch exists: %w", where, forge.ErrConflict)
		}
	} else if req.BaseSHA != req.ExpectedHead && !req.Force {
		return "", fmt.Errorf("%s: base %s is not the head %s and force is off: %w", where, short(req.BaseSHA), short(req.ExpectedHead), forge.ErrConflict)
	} else if cur, ok := r.branches[req.Branch]; !ok || cur != req.ExpectedHead {
		return "", fmt.Errorf("%s: head is %s, not %s: %w", where, short(cur), short(req.ExpectedHead), forge.ErrConflict)
	}
	files := map[string][]byte{}
	for p, c := range base.files {
		files[p] = c
	}
	var paths []string
	changed := false
	for p, c := range req.Files {
		old, ok := files[p]
		changed = changed || !ok || string(old) != string(c)
		files[p] = slices.Clone(c)
		paths = append(paths, p)
	}
	if !changed {
		return "", fmt.Errorf("%s: nothing changed: %w", where, forge.ErrInvalid)
	}
	sort.Strings(paths)
	c := f.newCommit(r, []string{req.BaseSHA}, files, req.Message, req.Author, req.Method == forge.CommitAPI)
	f.moveBranch(r, req.Branch, c.sha)
	f.record("%s:commit:%s:%s", req.Repo, req.Branch, strings.Join(paths, ","))
	return c.sha, nil
}

// CommitsSince implements forge.Forge.
func (f *Fake) CommitsSince(ctx context.Context, rp forge.Repo, base, head string) ([]forge.Commit, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("CommitsSince", false, rp)
	if err != nil {
		return nil, err
	}
	resolve := func(ref string) (string, error) {
		if sha, ok := r.branches[ref]; ok {
			return sha, nil
		}
		if _, ok := r.commits[ref]; ok {
			return ref, nil
		}
		return "", fmt.Errorf("comparing %s...%s in %s: %s: %w", short(base), short(head), rp, ref, forge.ErrNotFound)
	}
	b, err := resolve(base)
	if err != nil {
		return nil, err
	}
	h, err := resolve(head)
	if err != nil {
		return nil, err
	}
	exclude := f.ancestors(r, b)
	// Walk first parents back from head, as the compare API lists a
	// branch's own commits oldest first.
	var out []forge.Commit
	for s := h; s != "" && !exclude[s]; {
		c := r.commits[s]
		out = append(out, forge.Commit{SHA: c.sha, Parents: slices.Clone(c.parents), Message: c.message, Author: c.author, Committer: c.committer, Verified: c.verified})
		s = ""
		if len(c.parents) > 0 {
			s = c.parents[0]
		}
	}
	slices.Reverse(out)
	return out, nil
}

// GetPullRequest implements forge.Forge.
func (f *Fake) GetPullRequest(ctx context.Context, rp forge.Repo, number int) (forge.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("GetPullRequest", false, rp)
	if err != nil {
		return forge.PullRequest{}, err
	}
	p, err := f.findPull(r, number)
	if err != nil {
		return forge.PullRequest{}, err
	}
	return f.snapshot(r, p, true), nil
}

// ListPullRequests implements forge.Forge, newest first as GitHub lists them.
func (f *Fake) ListPullRequests(ctx context.Context, rp forge.Repo, filter forge.PullRequestFilter) ([]forge.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("ListPullRequests", false); err != nil {
		return nil, err
	}
	return f.listPulls(rp, filter)
}

func (f *Fake) listPulls(rp forge.Repo, filter forge.PullRequestFilter) ([]forge.PullRequest, error) {
	r, err := f.repo(rp)
	if err != nil {
		return nil, err
	}
	state := filter.State
	if state == "" {
		state = forge.StateOpen
	}
	var out []forge.PullRequest
	for i := len(r.pulls) - 1; i >= 0; i-- {
		p := r.pulls[i]
		if (state != forge.StateAll && p.pr.State != state) || (filter.Head != "" && p.pr.HeadRef != filter.Head) || (filter.Base != "" && p.pr.BaseRef != filter.Base) {
			continue
		}
		out = append(out, f.snapshot(r, p, false))
	}
	return out, nil
}

// FindOpenPullRequest implements forge.Forge.
func (f *Fake) FindOpenPullRequest(ctx context.Context, rp forge.Repo, head string) (forge.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("FindOpenPullRequest", false); err != nil {
		return forge.PullRequest{}, err
	}
	list, err := f.listPulls(rp, forge.PullRequestFilter{Head: head, State: forge.StateOpen})
	if err != nil {
		return forge.PullRequest{}, err
	}
	if len(list) == 0 {
		return forge.PullRequest{}, fmt.Errorf("open pull request from %s in %s: %w", head, rp, forge.ErrNotFound)
	}
	return list[0], nil
}

// CreatePullRequest implements forge.Forge.
func (f *Fake) CreatePullRequest(ctx context.Context, rp forge.Repo, np forge.NewPullRequest) (forge.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("CreatePullRequest", true, rp)
	if err != nil {
		return forge.PullRequest{}, err
	}
	where := fmt.Sprintf("opening a pull request from %s in %s", np.Head, rp)
	base, okB := r.branches[np.Base]
	head, okH := r.branches[np.Head]
	switch {
	case np.Title == "":
		return forge.PullRequest{}, fmt.Errorf("%s: title missing: %w", where, forge.ErrInvalid)
	case !okB || !okH:
		return forge.PullRequest{}, fmt.Errorf("%s: no such branch: %w", where, forge.ErrInvalid)
	}
	for _, p := range r.pulls {
		if p.pr.State == forge.StateOpen && p.pr.HeadRef == np.Head && p.pr.BaseRef == np.Base {
			return forge.PullRequest{}, fmt.Errorf("%s: #%d is already open: %w", where, p.pr.Number, forge.ErrConflict)
		}
	}
	if f.isAncestor(r, head, base) {
		return forge.PullRequest{}, fmt.Errorf("%s: no commits between %s and %s: %w", where, np.Base, np.Head, forge.ErrInvalid)
	}
	f.nextID++
	n := r.nextNumber
	r.nextNumber++
	p := &pull{pr: forge.PullRequest{Number: n, NodeID: fmt.Sprintf("PR_%d", f.nextID),
		URL:   fmt.Sprintf("https://forge.test/%s/pull/%d", rp, n),
		Title: np.Title, Body: np.Body, State: forge.StateOpen, HeadRef: np.Head, HeadSHA: head, BaseRef: np.Base, BaseSHA: base,
		Draft: np.Draft, Author: f.app.Login, Mine: true, CreatedAt: f.now()}}
	r.pulls = append(r.pulls, p)
	f.record("%s#%d:open:%s", rp, n, np.Head)
	return f.snapshot(r, p, true), nil
}

// UpdatePullRequest implements forge.Forge.
func (f *Fake) UpdatePullRequest(ctx context.Context, rp forge.Repo, number int, upd forge.PullRequestUpdate) (forge.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("UpdatePullRequest", true, rp)
	if err != nil {
		return forge.PullRequest{}, err
	}
	p, err := f.findPull(r, number)
	if err != nil {
		return forge.PullRequest{}, err
	}
	var changed []string
	if upd.Title != nil {
		p.pr.Title = *upd.Title
		changed = append(changed, "title")
	}
	if upd.Body != nil {
		p.pr.Body = *upd.Body
		changed = append(changed, "body")
	}
	f.record("%s#%d:edit:%s", rp, number, strings.Join(changed, ","))
	return f.snapshot(r, p, true), nil
}

// ClosePullRequest implements forge.Forge.
func (f *Fake) ClosePullRequest(ctx context.Context, rp forge.Repo, number int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("ClosePullRequest", true, rp)
	if err != nil {
		return err
	}
	p, err := f.findPull(r, number)
	if err != nil {
		return err
	}
	if p.pr.State == forge.StateOpen {
		p.pr.State, p.pr.ClosedAt = forge.StateClosed, f.now()
		p.autoMethod, p.pr.AutoMergeEnabled = "", false
	}
	f.record("%s#%d:close", rp, number)
	return nil
}

func (f *Fake) hasNumber(r *repo, number int) bool {
	_, errP := f.findPull(r, number)
	_, errI := f.findIssue(r, number)
	return errP == nil || errI == nil
}

// ListComments implements forge.Forge.
func (f *Fake) ListComments(ctx context.Context, rp forge.Repo, number int) ([]forge.Comment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("ListComments", false, rp)
	if err != nil {
		return nil, err
	}
	if !f.hasNumber(r, number) {
		return nil, fmt.Errorf("comments of %s#%d: %w", rp, number, forge.ErrNotFound)
	}
	var out []forge.Comment
	for _, c := range r.comments {
		if c.number == number {
			out = append(out, c.c)
		}
	}
	return out, nil
}

// CreateComment implements forge.Forge.
func (f *Fake) CreateComment(ctx context.Context, rp forge.Repo, number int, body string) (forge.Comment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("CreateComment", true, rp)
	if err != nil {
		return forge.Comment{}, err
	}
	if !f.hasNumber(r, number) {
		return forge.Comment{}, fmt.Errorf("commenting on %s#%d: %w", rp, number, forge.ErrNotFound)
	}
	f.nextID++
	c := forge.Comment{ID: f.nextID, Body: body, Author: f.app.Login, Mine: true, CreatedAt: f.now(), UpdatedAt: f.now(),
		URL: fmt.Sprintf("https://forge.test/%s/issues/%d#issuecomment-%d", rp, number, f.nextID)}
	r.comments = append(r.comments, &comment{number: number, c: c})
	f.record("%s#%d:comment", rp, number)
	return c, nil
}

// UpdateComment implements forge.Forge.
func (f *Fake) UpdateComment(ctx context.Context, rp forge.Repo, id int64, body string) (forge.Comment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("UpdateComment", true, rp)
	if err != nil {
		return forge.Comment{}, err
	}
	for _, c := range r.comments {
		if c.c.ID == id {
			if !c.c.Mine {
				return forge.Comment{}, fmt.Errorf("editing comment %d in %s: written by %s: %w", id, rp, c.c.Author, forge.ErrUnauthorized)
			}
			c.c.Body, c.c.UpdatedAt = body, f.now()
			f.record("%s#%d:comment-edit:%d", rp, c.number, id)
			return c.c, nil
		}
	}
	return forge.Comment{}, fmt.Errorf("editing comment %d in %s: %w", id, rp, forge.ErrNotFound)
}

// AddLabels implements forge.Forge.
func (f *Fake) AddLabels(ctx context.Context, rp forge.Repo, number int, labels ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("AddLabels", true, rp)
	if err != nil {
		return err
	}
	list, err := f.labelsOf(r, number)
	if err != nil {
		return err
	}
	for _, l := range labels {
		if !slices.Contains(*list, l) {
			f.record("%s#%d:label:%s", rp, number, l)
			*list = append(*list, l)
		}
	}
	*list = sortedUnique(*list)
	return nil
}

// RemoveLabel implements forge.Forge.
func (f *Fake) RemoveLabel(ctx context.Context, rp forge.Repo, number int, label string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("RemoveLabel", true, rp)
	if err != nil {
		return err
	}
	list, err := f.labelsOf(r, number)
	if err != nil {
		return err
	}
	if i := slices.Index(*list, label); i >= 0 {
		*list = slices.Delete(*list, i, i+1)
		f.record("%s#%d:unlabel:%s", rp, number, label)
	}
	return nil
}

// RequestReviewers implements forge.Forge.
func (f *Fake) RequestReviewers(ctx context.Context, rp forge.Repo, number int, users, teams []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("RequestReviewers", true, rp)
	if err != nil {
		return err
	}
	p, err := f.findPull(r, number)
	if err != nil {
		return err
	}
	for _, u := range users {
		if strings.EqualFold(u, p.pr.Author) {
			return fmt.Errorf("requesting reviewers on %s#%d: the author cannot review: %w", rp, number, forge.ErrInvalid)
		}
	}
	p.pr.RequestedReviewers = sortedUnique(append(p.pr.RequestedReviewers, users...))
	p.pr.RequestedTeams = sortedUnique(append(p.pr.RequestedTeams, teams...))
	who := slices.Clone(users)
	for _, t := range teams {
		who = append(who, "team:"+t)
	}
	f.record("%s#%d:reviewers:%s", rp, number, strings.Join(who, ","))
	return nil
}

func normalizeRun(run *forge.CheckRun) {
	if run.Status == "" {
		run.Status = forge.CheckQueued
		if run.Conclusion != "" {
			run.Status = forge.CheckCompleted
		}
	}
}

// CreateCheckRun implements forge.Forge.
func (f *Fake) CreateCheckRun(ctx context.Context, rp forge.Repo, run forge.CheckRun) (forge.CheckRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("CreateCheckRun", true, rp)
	if err != nil {
		return forge.CheckRun{}, err
	}
	if _, ok := r.commits[run.HeadSHA]; !ok || run.Name == "" {
		return forge.CheckRun{}, fmt.Errorf("creating check run %q on %s in %s: %w", run.Name, short(run.HeadSHA), rp, forge.ErrInvalid)
	}
	normalizeRun(&run)
	f.nextID++
	run.ID, run.Mine = f.nextID, true
	stored := run
	r.checks = append(r.checks, &stored)
	f.record("%s:check:%s:%s", rp, run.Name, run.Conclusion)
	f.tryAutoMerge(r)
	return run, nil
}

// UpdateCheckRun implements forge.Forge.
func (f *Fake) UpdateCheckRun(ctx context.Context, rp forge.Repo, id int64, run forge.CheckRun) (forge.CheckRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("UpdateCheckRun", true, rp)
	if err != nil {
		return forge.CheckRun{}, err
	}
	for _, cr := range r.checks {
		if cr.ID != id {
			continue
		}
		normalizeRun(&run)
		run.ID, run.HeadSHA, run.Mine = cr.ID, cr.HeadSHA, cr.Mine
		if run.Name == "" {
			run.Name = cr.Name
		}
		*cr = run
		f.record("%s:check-update:%s:%s", rp, run.Name, run.Conclusion)
		f.tryAutoMerge(r)
		return run, nil
	}
	return forge.CheckRun{}, fmt.Errorf("updating check run %d in %s: %w", id, rp, forge.ErrNotFound)
}

// ListCheckRuns implements forge.Forge, newest first.
func (f *Fake) ListCheckRuns(ctx context.Context, rp forge.Repo, sha, name string) ([]forge.CheckRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("ListCheckRuns", false, rp)
	if err != nil {
		return nil, err
	}
	if _, ok := r.commits[sha]; !ok {
		return nil, fmt.Errorf("check runs on %s in %s: %w", short(sha), rp, forge.ErrNotFound)
	}
	var out []forge.CheckRun
	for i := len(r.checks) - 1; i >= 0; i-- {
		if cr := r.checks[i]; cr.HeadSHA == sha && (name == "" || cr.Name == name) {
			out = append(out, *cr)
		}
	}
	return out, nil
}

// EnableAutoMerge implements forge.Forge with GitHub's refusals.
func (f *Fake) EnableAutoMerge(ctx context.Context, rp forge.Repo, pr forge.PullRequest, expectedHead string, method forge.MergeMethod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("EnableAutoMerge", true, rp)
	if err != nil {
		return err
	}
	p, err := f.findPull(r, pr.Number)
	if err != nil {
		return err
	}
	where := fmt.Sprintf("enabling auto-merge on %s#%d", rp, pr.Number)
	switch {
	case p.pr.State != forge.StateOpen:
		return fmt.Errorf("%s: closed: %w", where, forge.ErrInvalid)
	case !r.allowAutoMerge:
		return fmt.Errorf("%s: %w", where, forge.ErrAutoMergeNotAllowed)
	case expectedHead != "" && expectedHead != p.pr.HeadSHA:
		return fmt.Errorf("%s: head moved to %s: %w", where, short(p.pr.HeadSHA), forge.ErrConflict)
	}
	if method == "" {
		method = forge.MergeCommit
	}
	switch st, _, _ := f.mergeState(r, p); st {
	case "blocked":
	case "draft":
		return fmt.Errorf("%s: a draft: %w", where, forge.ErrInvalid)
	default:
		return fmt.Errorf("%s: in %s status: %w", where, st, forge.ErrAlreadyMergeable)
	}
	p.autoMethod, p.pr.AutoMergeEnabled = method, true
	f.record("%s#%d:auto-merge:%s", rp, pr.Number, method)
	return nil
}

// Merge implements forge.Forge.
func (f *Fake) Merge(ctx context.Context, rp forge.Repo, number int, headSHA string, method forge.MergeMethod) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("Merge", true, rp)
	if err != nil {
		return "", err
	}
	p, err := f.findPull(r, number)
	if err != nil {
		return "", err
	}
	if method == "" {
		method = forge.MergeCommit
	}
	if headSHA != "" && p.pr.State == forge.StateOpen && headSHA != p.pr.HeadSHA {
		return "", fmt.Errorf("merging %s#%d: head moved to %s: %w", rp, number, short(p.pr.HeadSHA), forge.ErrConflict)
	}
	sha, err := f.doMerge(r, p, method, f.app.Login)
	if err != nil {
		return "", fmt.Errorf("merging %s#%d: %w", rp, number, err)
	}
	f.record("%s#%d:merge:%s", rp, number, method)
	return sha, nil
}

// ListIssues implements forge.Forge, newest first.
func (f *Fake) ListIssues(ctx context.Context, rp forge.Repo, label string, state forge.PRState) ([]forge.Issue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("ListIssues", false, rp)
	if err != nil {
		return nil, err
	}
	if state == "" {
		state = forge.StateOpen
	}
	var out []forge.Issue
	for i := len(r.issues) - 1; i >= 0; i-- {
		is := r.issues[i]
		if (state == forge.StateAll || is.State == state) && (label == "" || slices.Contains(is.Labels, label)) {
			c := *is
			c.Labels = slices.Clone(is.Labels)
			out = append(out, c)
		}
	}
	return out, nil
}

// CreateIssue implements forge.Forge.
func (f *Fake) CreateIssue(ctx context.Context, rp forge.Repo, ni forge.NewIssue) (forge.Issue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("CreateIssue", true, rp)
	if err != nil {
		return forge.Issue{}, err
	}
	if ni.Title == "" {
		return forge.Issue{}, fmt.Errorf("opening an issue in %s: title missing: %w", rp, forge.ErrInvalid)
	}
	n := r.nextNumber
	r.nextNumber++
	is := &forge.Issue{Number: n, URL: fmt.Sprintf("https://forge.test/%s/issues/%d", rp, n), Title: ni.Title, Body: ni.Body,
		State: forge.StateOpen, Labels: sortedUnique(slices.Clone(ni.Labels)), Author: f.app.Login, Mine: true}
	r.issues = append(r.issues, is)
	f.record("%s#%d:issue:open", rp, n)
	c := *is
	c.Labels = slices.Clone(is.Labels)
	return c, nil
}

// UpdateIssue implements forge.Forge.
func (f *Fake) UpdateIssue(ctx context.Context, rp forge.Repo, number int, upd forge.IssueUpdate) (forge.Issue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.beginIn("UpdateIssue", true, rp)
	if err != nil {
		return forge.Issue{}, err
	}
	is, err := f.findIssue(r, number)
	if err != nil {
		return forge.Issue{}, err
	}
	var changed []string
	if upd.Title != nil {
		is.Title = *upd.Title
		changed = append(changed, "title")
	}
	if upd.Body != nil {
		is.Body = *upd.Body
		changed = append(changed, "body")
	}
	if upd.State != nil {
		if *upd.State != forge.StateOpen && *upd.State != forge.StateClosed {
			return forge.Issue{}, fmt.Errorf("updating issue %s#%d: state %q: %w", rp, number, *upd.State, forge.ErrInvalid)
		}
		is.State = *upd.State
		changed = append(changed, "state")
	}
	f.record("%s#%d:issue:edit:%s", rp, number, strings.Join(changed, ","))
	c := *is
	c.Labels = slices.Clone(is.Labels)
	return c, nil
}

// checkRequest refuses what the GitHub adapter refuses before any request.
func checkRequest(req forge.CommitRequest) error {
	switch {
	case req.Branch == "":
		return fmt.Errorf("branch is required: %w", forge.ErrInvalid)
	case len(req.Files) == 0:
		return fmt.Errorf("no files: %w", forge.ErrInvalid)
	case req.Author.Name == "" || req.Author.Email == "":
		return fmt.Errorf("author name and email are required: %w", forge.ErrInvalid)
	case req.Method != "" && req.Method != forge.CommitGit && req.Method != forge.CommitAPI:
		return fmt.Errorf("unknown method %q: %w", req.Method, forge.ErrInvalid)
	}
	for p := range req.Files {
		if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, ".git/") {
			return fmt.Errorf("file path %q is not a clean relative path: %w", p, forge.ErrInvalid)
		}
	}
	return nil
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
