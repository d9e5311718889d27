package localhub

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

const zeroSHA = "0000000000000000000000000000000000000000"

// payload starts a webhook payload with the fields every event carries.
func (h *Hub) payload(rs *repoState, sender string) obj {
	p := obj{"repository": h.renderRepo(rs), "sender": h.user(sender)}
	if inst := h.installationFor(rs.Owner); inst != nil {
		p["installation"] = obj{"id": inst.ID, "node_id": nodeID("MDIz", inst.ID)}
	}
	return p
}

// refChanged is called after every ref update, from REST, merges and git
// pushes alike: it sends the push event, keeps pull request heads in step
// (synchronize, or closed when the head branch is deleted) and lets
// auto-merge act. Callers hold h.mu.
func (h *Hub) refChanged(rs *repoState, g *gitRepo, ref, old, next, actor string) {
	before, after := old, next
	if before == "" {
		before = zeroSHA
	}
	if after == "" {
		after = zeroSHA
	}
	p := h.payload(rs, actor)
	p["ref"], p["before"], p["after"] = ref, before, after
	p["created"], p["deleted"] = old == "", next == ""
	forced := false
	if old != "" && next != "" {
		ff, _ := g.isAncestor(old, next)
		forced = !ff
	}
	p["forced"], p["base_ref"] = forced, nil
	p["compare"] = fmt.Sprintf("%s/%s/compare/%s...%s", h.baseURL, rs.fullName(), before[:12], after[:12])
	p["pusher"] = obj{"name": actor, "email": h.botEmail()}
	commits := []obj{}
	p["head_commit"] = nil
	if next != "" {
		from := old
		if forced || old == "" {
			from = ""
			if mb, _ := g.mergeBase(rs.DefaultBranch, next); mb != "" && old == "" {
				from = mb
			}
		}
		list, _ := g.revList(from, next)
		if len(list) > 20 {
			list = list[len(list)-20:]
		}
		for _, sha := range list {
			if co, err := g.readCommit(sha); err == nil {
				commits = append(commits, h.pushCommit(rs, co))
			}
		}
		if co, err := g.readCommit(next); err == nil {
			p["head_commit"] = h.pushCommit(rs, co)
		}
	}
	p["commits"] = commits
	h.recordEvent(rs, "push", "", actor)
	h.hooks.enqueue("push", "", p)

	branch, isBranch := strings.CutPrefix(ref, "refs/heads/")
	if !isBranch {
		return
	}
	for _, is := range rs.Issues {
		if is.Pull != nil && is.State == "open" && is.Pull.BaseRef == branch {
			// The base moved: mergeability is computed again.
			is.Pull.Computing = true
		}
		if is.Pull == nil || is.State != "open" || is.Pull.HeadRef != branch {
			continue
		}
		if next == "" {
			// GitHub closes a pull request whose head branch is deleted.
			h.closeIssue(is)
			h.pullEvent(rs, g, is, "closed", actor, nil)
			continue
		}
		if is.Pull.HeadSHA == next {
			continue
		}
		prev := is.Pull.HeadSHA
		is.Pull.HeadSHA = next
		is.Pull.Computing = true
		is.Updated = h.now()
		// As on GitHub, a push by someone without write access cancels
		// auto-merge; a push by the App or a collaborator keeps it armed.
		if !h.canWrite(rs, actor) {
			is.Pull.AutoMerge = nil
		}
		h.pullEvent(rs, g, is, "synchronize", actor, obj{"before": prev, "after": next})
	}
	h.tryAutoMerge(rs, g)
}

func (h *Hub) pushCommit(rs *repoState, co *commitObject) obj {
	return obj{"id": co.SHA, "tree_id": co.Tree, "distinct": true, "message": strings.TrimSuffix(co.Message, "\n"),
		"timestamp": ts(co.Committer.When), "url": h.baseURL + "/" + rs.fullName() + "/commit/" + co.SHA,
		"author":    obj{"name": co.Author.Name, "email": co.Author.Email},
		"committer": obj{"name": co.Committer.Name, "email": co.Committer.Email},
		"added":     []string{}, "removed": []string{}, "modified": []string{}}
}

func (h *Hub) pullEvent(rs *repoState, g *gitRepo, is *issue, action, actor string, extra obj) {
	p := h.payload(rs, actor)
	p["number"] = is.Number
	p["pull_request"] = h.renderPull(rs, g, is, false)
	for k, v := range extra {
		p[k] = v
	}
	h.recordEvent(rs, "pull_request", action, actor)
	h.hooks.enqueue("pull_request", action, p)
}

func (h *Hub) closeIssue(is *issue) {
	now := h.now()
	is.State, is.Closed, is.Updated = "closed", &now, now
}

// mergeState is GitHub's view of whether a pull request can merge now.
type mergeState struct {
	mergeable bool   // no conflicts
	state     string // clean, dirty, blocked, unstable, draft
	tree      string // the merge result's tree when mergeable
	missing   string // the first required check that is not green
	failing   bool   // whether that check failed (rather than pending)
}

// mergeability computes the merge check for real: a three-way merge of the
// base and head branches, then the base branch's required checks.
func (h *Hub) mergeability(rs *repoState, g *gitRepo, is *issue) (mergeState, error) {
	baseSHA, err := g.branchSHA(is.Pull.BaseRef)
	if err != nil {
		return mergeState{state: "dirty"}, nil
	}
	tree, clean, err := g.mergeTrees(baseSHA, is.Pull.HeadSHA)
	if err != nil {
		return mergeState{}, err
	}
	if !clean {
		return mergeState{state: "dirty"}, nil
	}
	ms := mergeState{mergeable: true, tree: tree, state: "clean"}
	if is.Pull.Draft {
		ms.state = "draft"
		return ms, nil
	}
	if prot := rs.Protection[is.Pull.BaseRef]; prot != nil {
		for _, name := range prot.RequiredChecks {
			switch h.checkState(rs, is.Pull.HeadSHA, name) {
			case "success":
			case "failure":
				ms.state, ms.missing, ms.failing = "blocked", name, true
			default:
				ms.state, ms.missing = "blocked", name
			}
			if ms.missing != "" {
				return ms, nil
			}
		}
	}
	for _, cr := range rs.CheckRuns {
		if cr.HeadSHA == is.Pull.HeadSHA && cr.Status == "completed" && !greenConclusion(cr.Conclusion) {
			ms.state = "unstable"
		}
	}
	return ms, nil
}

func greenConclusion(c string) bool { return c == "success" || c == "neutral" || c == "skipped" }

// checkState is the state of one required check at sha: the latest check run
// of that name, else the latest commit status of that context.
func (h *Hub) checkState(rs *repoState, sha, name string) string {
	var run *checkRun
	for _, cr := range rs.CheckRuns {
		if cr.HeadSHA == sha && cr.Name == name {
			run = cr
		}
	}
	if run != nil {
		switch {
		case run.Status != "completed":
			return "pending"
		case greenConclusion(run.Conclusion):
			return "success"
		default:
			return "failure"
		}
	}
	var st *commitStatus
	for _, s := range rs.Statuses {
		if s.SHA == sha && s.Context == name {
			st = s
		}
	}
	if st == nil {
		return "missing"
	}
	switch st.State {
	case "success":
		return "success"
	case "pending":
		return "pending"
	default:
		return "failure"
	}
}

func (h *Hub) renderPull(rs *repoState, g *gitRepo, is *issue, detailed bool) obj {
	o := h.renderIssue(rs, is)
	delete(o, "pull_request")
	delete(o, "comments")
	pr := is.Pull
	baseSHA := pr.BaseSHA
	if is.State == "open" {
		if sha, err := g.branchSHA(pr.BaseRef); err == nil {
			baseSHA = sha
		}
	}
	reviewers := []obj{}
	for _, r := range pr.Reviewers {
		reviewers = append(reviewers, h.user(r))
	}
	teams := []obj{}
	for _, t := range pr.TeamReviewers {
		teams = append(teams, obj{"slug": t, "name": t})
	}
	branch := func(ref, sha string) obj {
		return obj{"label": rs.Owner + ":" + ref, "ref": ref, "sha": sha, "user": h.user(rs.Owner), "repo": h.renderRepo(rs)}
	}
	pu := fmt.Sprintf("%s/pulls/%d", h.repoURL(rs), is.Number)
	// GraphQL's pullRequestId is this node id, as on GitHub.
	o["node_id"] = nodeID("PR", is.ID)
	o["url"], o["issue_url"] = pu, fmt.Sprintf("%s/issues/%d", h.repoURL(rs), is.Number)
	o["diff_url"], o["patch_url"] = o["html_url"].(string)+".diff", o["html_url"].(string)+".patch"
	o["commits_url"] = pu + "/commits"
	o["comments_url"] = fmt.Sprintf("%s/issues/%d/comments", h.repoURL(rs), is.Number)
	o["review_comments_url"], o["review_comment_url"] = pu+"/comments", h.repoURL(rs)+"/pulls/comments{/number}"
	o["statuses_url"] = h.repoURL(rs) + "/statuses/" + pr.HeadSHA
	o["_links"] = obj{"self": obj{"href": pu}, "html": obj{"href": o["html_url"]}, "issue": obj{"href": o["issue_url"]},
		"comments": obj{"href": o["comments_url"]}, "review_comments": obj{"href": o["review_comments_url"]},
		"review_comment": obj{
			"href": o["review_comment_url"],
		}, "commits": obj{"href": o["commits_url"]}, "statuses": obj{"href": o["statuses_url"]}}
	o["head"], o["base"] = branch(pr.HeadRef, pr.HeadSHA), branch(pr.BaseRef, baseSHA)
	o["draft"], o["merged"], o["merged_at"] = pr.Draft, pr.Merged, tsPtr(pr.MergedAt)
	o["merged_by"] = h.user(pr.MergedBy)
	o["merge_commit_sha"] = nil
	if pr.MergeCommitSHA != "" {
		o["merge_commit_sha"] = pr.MergeCommitSHA
	}
	o["requested_reviewers"], o["requested_teams"] = reviewers, teams
	o["maintainer_can_modify"], o["author_association"] = false, "NONE"
	o["auto_merge"] = nil
	if am := pr.AutoMerge; am != nil {
		o["auto_merge"] = obj{
			"enabled_by":     h.user(am.EnabledBy),
			"merge_method":   am.Method,
			"commit_title":   am.Title,
			"commit_message": am.Message,
		}
	}
	o["mergeable"], o["mergeable_state"], o["rebaseable"] = nil, "unknown", nil
	if !detailed {
		return o
	}
	if is.State == "open" && !pr.Computing {
		if ms, err := h.mergeability(rs, g, is); err == nil {
			o["mergeable"], o["mergeable_state"], o["rebaseable"] = ms.mergeable, ms.state, ms.mergeable
		}
	}
	from := baseSHA
	if mb, _ := g.mergeBase(baseSHA, pr.HeadSHA); mb != "" {
		from = mb
	}
	commits, _ := g.revList(from, pr.HeadSHA)
	files, stats, _ := g.diffFiles(from, pr.HeadSHA)
	o["commits"], o["changed_files"] = len(commits), len(files)
	if stats != nil {
		o["additions"], o["deletions"] = stats["additions"], stats["deletions"]
	}
	comments := 0
	for _, c := range rs.Comments {
		if c.Issue == is.Number {
			comments++
		}
	}
	o["comments"], o["review_comments"] = comments, 0
	return o
}

// loadPull finds the pull request {number}; it answers 404 itself.
func (c *call) loadPull() *issue {
	if !c.loadRepo() {
		return nil
	}
	n, err := strconv.Atoi(c.p["number"])
	if err == nil {
		for _, is := range c.repo.Issues {
			if is.Number == n && is.Pull != nil {
				return is
			}
		}
	}
	c.fail(http.StatusNotFound, "Not Found")
	return nil
}

func (h *Hub) listPulls(c *call) {
	if !c.loadRepo() {
		return
	}
	state := c.query("state")
	if state == "" {
		state = "open"
	}
	if state != "open" && state != "closed" && state != "all" {
		c.invalid("Validation Failed", obj{"resource": "PullRequest", "field": "state", "code": "invalid"})
		return
	}
	headOwner, headRef := "", ""
	if head := c.query("head"); head != "" {
		var ok bool
		if headOwner, headRef, ok = strings.Cut(head, ":"); !ok {
			// GitHub ignores a head filter without "user:"; keep that.
			headOwner, headRef = "", ""
		}
	}
	var list []*issue
	for _, is := range c.repo.Issues {
		if is.Pull == nil || (state != "all" && is.State != state) {
			continue
		}
		if headOwner != "" && (!strings.EqualFold(headOwner, c.repo.Owner) || is.Pull.HeadRef != headRef) {
			continue
		}
		if b := c.query("base"); b != "" && is.Pull.BaseRef != b {
			continue
		}
		list = append(list, is)
	}
	sortKey := func(is *issue) int64 {
		if c.query("sort") == "updated" {
			return is.Updated.UnixNano()*1000 + int64(is.Number)
		}
		return is.Created.UnixNano()*1000 + int64(is.Number)
	}
	desc := c.query("direction") != "asc"
	if c.query("direction") == "" && (c.query("sort") == "popularity" || c.query("sort") == "long-running") {
		desc = false
	}
	sort.SliceStable(list, func(i, j int) bool {
		if desc {
			return sortKey(list[i]) > sortKey(list[j])
		}
		return sortKey(list[i]) < sortKey(list[j])
	})
	out := []obj{}
	for _, is := range list {
		out = append(out, h.renderPull(c.repo, c.git, is, false))
	}
	c.json(http.StatusOK, paginate(c, out))
}

func (h *Hub) getPull(c *call) {
	is := c.loadPull()
	if is == nil {
		return
	}
	c.json(http.StatusOK, h.renderPull(c.repo, c.git, is, true))
	// The read started the computation; the next read has its answer.
	is.Pull.Computing = false
}

func (h *Hub) openPullFor(rs *repoState, head, base string) *issue {
	for _, is := range rs.Issues {
		if is.Pull != nil && is.State == "open" && is.Pull.HeadRef == head && is.Pull.BaseRef == base {
			return is
		}
	}
	return nil
}

func (h *Hub) createPull(c *call) {
	if !c.loadRepo() {
		return
	}
	var body struct {
		Title *string `json:"title"`
		Head  string  `json:"head"`
		Base  string  `json:"base"`
		Body  string  `json:"body"`
		Draft bool    `json:"draft"`
	}
	if !c.decode(&body) {
		return
	}
	if body.Title == nil || *body.Title == "" {
		c.invalid("Validation Failed", obj{"resource": "PullRequest", "field": "title", "code": "missing_field"})
		return
	}
	if c.bodyTooLong("PullRequest", body.Body) {
		return
	}
	headRef := body.Head
	if owner, ref, ok := strings.Cut(body.Head, ":"); ok {
		if !strings.EqualFold(owner, c.repo.Owner) {
			// Forks are not modelled: a head in another account does not exist.
			c.invalid("Validation Failed", obj{"resource": "PullRequest", "field": "head", "code": "invalid"})
			return
		}
		headRef = ref
	}
	baseSHA, err := c.git.branchSHA(body.Base)
	if err != nil {
		c.invalid("Validation Failed", obj{"resource": "PullRequest", "field": "base", "code": "invalid"})
		return
	}
	headSHA, err := c.git.branchSHA(headRef)
	if err != nil {
		c.invalid("Validation Failed", obj{"resource": "PullRequest", "field": "head", "code": "invalid"})
		return
	}
	if h.openPullFor(c.repo, headRef, body.Base) != nil {
		c.invalid(
			"Validation Failed",
			obj{
				"resource": "PullRequest",
				"code":     "custom",
				"message":  "A pull request already exists for " + c.repo.Owner + ":" + headRef + ".",
			},
		)
		return
	}
	if in, _ := c.git.isAncestor(headSHA, baseSHA); in {
		c.invalid(
			"Validation Failed",
			obj{"resource": "PullRequest", "code": "custom", "message": "No commits between " + body.Base + " and " + headRef},
		)
		return
	}
	now := h.now()
	is := &issue{
		ID:      h.st.newID(),
		Number:  c.repo.NextNumber,
		Title:   *body.Title,
		Body:    body.Body,
		State:   "open",
		User:    c.actor(),
		Created: now,
		Updated: now,
		Pull: &pull{
			HeadRef:   headRef,
			HeadSHA:   headSHA,
			BaseRef:   body.Base,
			BaseSHA:   baseSHA,
			Draft:     body.Draft,
			Computing: true,
		},
	}
	c.repo.NextNumber++
	c.repo.Issues = append(c.repo.Issues, is)
	h.pullEvent(c.repo, c.git, is, "opened", c.actor(), nil)
	c.json(http.StatusCreated, h.renderPull(c.repo, c.git, is, true))
}

func (h *Hub) updatePull(c *call) {
	is := c.loadPull()
	if is == nil {
		return
	}
	var body struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if !c.decode(&body) {
		return
	}
	var actions []string
	if body.State != nil && *body.State != "open" && *body.State != "closed" {
		c.invalid("Validation Failed", obj{"resource": "PullRequest", "field": "state", "code": "invalid"})
		return
	}
	if body.Body != nil && c.bodyTooLong("PullRequest", *body.Body) {
		return
	}
	if body.Base != nil && *body.Base != is.Pull.BaseRef {
		if is.State != "open" {
			c.invalid(
				"Validation Failed",
				obj{
					"resource": "PullRequest",
					"code":     "custom",
					"message":  "Cannot change the base branch of a closed pull request.",
				},
			)
			return
		}
		if _, err := c.git.branchSHA(*body.Base); err != nil {
			c.invalid("Validation Failed", obj{"resource": "PullRequest", "field": "base", "code": "invalid"})
			return
		}
		if h.openPullFor(c.repo, is.Pull.HeadRef, *body.Base) != nil {
			c.invalid(
				"Validation Failed",
				obj{
					"resource": "PullRequest",
					"code":     "custom",
					"message": "A pull request already exists for base branch '" + *body.Base +
						"' and head branch '" + is.Pull.HeadRef + "'",
				},
			)
			return
		}
		is.Pull.BaseRef = *body.Base
		// GitHub cancels auto-merge when the base branch changes.
		is.Pull.AutoMerge = nil
		actions = append(actions, "edited")
	}
	if body.Title != nil && *body.Title != is.Title {
		is.Title = *body.Title
		actions = append(actions, "edited")
	}
	if body.Body != nil && *body.Body != is.Body {
		is.Body = *body.Body
		actions = append(actions, "edited")
	}
	if body.State != nil && *body.State != is.State {
		switch {
		case *body.State == "closed":
			h.closeIssue(is)
			actions = append(actions, "closed")
		case is.Pull.Merged:
			c.invalid(
				"Validation Failed",
				obj{
					"resource": "PullRequest",
					"code":     "custom",
					"message":  "state cannot be changed. The pull request has been merged.",
				},
			)
			return
		default:
			sha, err := c.git.branchSHA(is.Pull.HeadRef)
			if err != nil {
				c.invalid(
					"Validation Failed",
					obj{
						"resource": "PullRequest",
						"code":     "custom",
						"message":  "state cannot be changed. The " + is.Pull.HeadRef + " branch has been deleted.",
					},
				)
				return
			}
			if h.openPullFor(c.repo, is.Pull.HeadRef, is.Pull.BaseRef) != nil {
				c.invalid(
					"Validation Failed",
					obj{
						"resource": "PullRequest",
						"code":     "custom",
						"message":  "A pull request already exists for " + c.repo.Owner + ":" + is.Pull.HeadRef + ".",
					},
				)
				return
			}
			is.State, is.Closed, is.Pull.HeadSHA = "open", nil, sha
			actions = append(actions, "reopened")
		}
	}
	if len(actions) > 0 {
		is.Updated = h.now()
	}
	sent := map[string]bool{}
	for _, a := range actions {
		if !sent[a] {
			sent[a] = true
			h.pullEvent(c.repo, c.git, is, a, c.actor(), nil)
		}
	}
	c.json(http.StatusOK, h.renderPull(c.repo, c.git, is, true))
}

// mergeRefusal is why a merge cannot happen, with GitHub's status and message.
type mergeRefusal struct {
	status int
	msg    string
}

// merge merges an open pull request with method; callers hold h.mu.
func (h *Hub) merge(
	rs *repoState,
	g *gitRepo,
	is *issue,
	method, title, message, actor string,
) (string, *mergeRefusal, error) {
	if is.State != "open" {
		return "", &mergeRefusal{http.StatusMethodNotAllowed, "Pull Request is not mergeable"}, nil
	}
	allowed := map[string]bool{"merge": rs.AllowMerge, "squash": rs.AllowSquash, "rebase": rs.AllowRebase}
	if ok, known := allowed[method]; !known {
		return "", &mergeRefusal{http.StatusUnprocessableEntity, "Invalid merge_method"}, nil
	} else if !ok {
		what := map[string]string{"merge": "Merge commits", "squash": "Squash merges", "rebase": "Rebase merges"}[method]
		return "", &mergeRefusal{http.StatusMethodNotAllowed, what + " are not allowed on this repository."}, nil
	}
	ms, err := h.mergeability(rs, g, is)
	if err != nil {
		return "", nil, err
	}
	switch {
	case !ms.mergeable:
		return "", &mergeRefusal{http.StatusMethodNotAllowed, "Pull Request is not mergeable"}, nil
	case ms.state == "draft":
		return "", &mergeRefusal{http.StatusMethodNotAllowed, "Pull Request is still a draft"}, nil
	case ms.missing != "" && ms.failing:
		return "", &mergeRefusal{
			http.StatusMethodNotAllowed,
			fmt.Sprintf("Required status check %q is failing.", ms.missing),
		}, nil
	case ms.missing != "":
		return "", &mergeRefusal{
			http.StatusMethodNotAllowed,
			fmt.Sprintf("Required status check %q is expected.", ms.missing),
		}, nil
	}
	baseSHA, err := g.branchSHA(is.Pull.BaseRef)
	if err != nil {
		return "", nil, err
	}
	// GitHub is the committer of merges it makes, and signs them.
	who := person{Name: actor, Email: h.botEmail(), When: h.now()}
	gh := person{Name: "GitHub", Email: "noreply@github.com", When: h.now()}
	var sha string
	switch method {
	case "merge":
		if title == "" {
			title = fmt.Sprintf("Merge pull request #%d from %s/%s", is.Number, rs.Owner, is.Pull.HeadRef)
		}
		if message == "" {
			message = is.Title
		}
		sha, err = g.writeCommit(
			&commitObject{
				Tree:      ms.tree,
				Parents:   []string{baseSHA, is.Pull.HeadSHA},
				Author:    who,
				Committer: gh,
				Message:   title + "\n\n" + message + "\n",
			},
		)
	case "squash":
		if title == "" {
			title = fmt.Sprintf("%s (#%d)", is.Title, is.Number)
		}
		if message == "" {
			mb, _ := g.mergeBase(baseSHA, is.Pull.HeadSHA)
			list, _ := g.revList(mb, is.Pull.HeadSHA)
			var lines []string
			for _, s := range list {
				if co, err := g.readCommit(s); err == nil {
					lines = append(lines, "* "+strings.TrimSpace(co.Message))
				}
			}
			message = strings.Join(lines, "\n\n")
		}
		sha, err = g.writeCommit(
			&commitObject{
				Tree:      ms.tree,
				Parents:   []string{baseSHA},
				Author:    who,
				Committer: gh,
				Message:   title + "\n\n" + message + "\n",
			},
		)
	case "rebase":
		mb, _ := g.mergeBase(baseSHA, is.Pull.HeadSHA)
		var ok bool
		sha, ok, err = g.rebase(baseSHA, mb, is.Pull.HeadSHA, gh)
		if err == nil && !ok {
			return "", &mergeRefusal{http.StatusMethodNotAllowed, "This branch can't be rebased"}, nil
		}
	}
	if err != nil {
		return "", nil, err
	}
	if err := g.updateRef("refs/heads/"+is.Pull.BaseRef, sha, baseSHA); err != nil {
		return "", &mergeRefusal{http.StatusConflict, "Base branch was modified. Review and try the merge again."}, nil
	}
	if rs.Verified == nil {
		rs.Verified = map[string]bool{}
	}
	rs.Verified[sha] = true
	now := h.now()
	is.Pull.Merged, is.Pull.MergedAt, is.Pull.MergedBy = true, &now, actor
	is.Pull.MergeCommitSHA, is.Pull.BaseSHA = sha, baseSHA
	is.Pull.AutoMerge = nil
	h.closeIssue(is)
	h.pullEvent(rs, g, is, "closed", actor, nil)
	h.refChanged(rs, g, "refs/heads/"+is.Pull.BaseRef, baseSHA, sha, actor)
	return sha, nil, nil
}

func (h *Hub) mergePull(c *call) {
	is := c.loadPull()
	if is == nil {
		return
	}
	var body struct {
		CommitTitle   string `json:"commit_title"`
		CommitMessage string `json:"commit_message"`
		SHA           string `json:"sha"`
		MergeMethod   string `json:"merge_method"`
	}
	if !c.decode(&body) {
		return
	}
	if body.MergeMethod == "" {
		body.MergeMethod = "merge"
	}
	if body.SHA != "" && is.State == "open" && body.SHA != is.Pull.HeadSHA {
		c.fail(http.StatusConflict, "Head branch was modified. Review and try the merge again.")
		return
	}
	sha, refusal, err := h.merge(c.repo, c.git, is, body.MergeMethod, body.CommitTitle, body.CommitMessage, c.actor())
	switch {
	case err != nil:
		c.internal(err)
	case refusal != nil:
		c.fail(refusal.status, refusal.msg)
	default:
		c.json(http.StatusOK, obj{"sha": sha, "merged": true, "message": "Pull Request successfully merged"})
	}
}

// tryAutoMerge merges every pull request with auto-merge enabled whose
// checks are green, as GitHub does when a check or status completes.
func (h *Hub) tryAutoMerge(rs *repoState, g *gitRepo) {
	if h.autoMerging {
		return // a merge below moved a branch; the loop here sees the result
	}
	h.autoMerging = true
	defer func() { h.autoMerging = false }()
	for _, is := range rs.Issues {
		if is.Pull == nil || is.State != "open" || is.Pull.AutoMerge == nil {
			continue
		}
		ms, err := h.mergeability(rs, g, is)
		if err != nil || ms.state != "clean" && ms.state != "unstable" {
			continue
		}
		am := is.Pull.AutoMerge
		if _, refusal, err := h.merge(rs, g, is, am.Method, am.Title, am.Message, am.EnabledBy); err != nil ||
			refusal != nil {
			h.logger.Warn("auto-merge failed", "repo", rs.fullName(), "pr", is.Number, "err", err)
		}
	}
}

func (h *Hub) listPullCommits(c *call) {
	is := c.loadPull()
	if is == nil {
		return
	}
	list, err := c.git.revList(pullMergeBase(c.git, is), is.Pull.HeadSHA)
	if err != nil {
		c.internal(err)
		return
	}
	out := []obj{}
	for _, sha := range list {
		if co, err := c.git.readCommit(sha); err == nil {
			out = append(out, h.renderRepoCommit(c.repo, co))
		}
	}
	c.json(http.StatusOK, paginate(c, out))
}

func (h *Hub) listPullFiles(c *call) {
	is := c.loadPull()
	if is == nil {
		return
	}
	from := pullMergeBase(c.git, is)
	if from == "" {
		from = emptyTree
	}
	files, _, err := c.git.diffFiles(from, is.Pull.HeadSHA)
	h.fileURLs(c.repo, is.Pull.HeadSHA, files)
	if err != nil {
		c.internal(err)
		return
	}
	c.json(http.StatusOK, paginate(c, files))
}

// pullMergeBase is where a pull request's own commits start: the merge base
// of its head with the base branch as the branch is now while the pull
// request is open, and as it was merged into once it is closed. It is ""
// when the two share no history.
func pullMergeBase(g *gitRepo, is *issue) string {
	base := is.Pull.BaseSHA
	if is.State == "open" {
		if sha, err := g.branchSHA(is.Pull.BaseRef); err == nil {
			base = sha
		}
	}
	from, _ := g.mergeBase(base, is.Pull.HeadSHA)
	return from
}

func validLogin(s string) bool {
	if s == "" || len(s) > 39 || strings.HasPrefix(s, "-") || strings.HasSuffix(s, "-") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

func (h *Hub) requestReviewers(c *call) {
	is := c.loadPull()
	if is == nil {
		return
	}
	var body struct {
		Reviewers     []string `json:"reviewers"`
		TeamReviewers []string `json:"team_reviewers"`
	}
	if !c.decode(&body) {
		return
	}
	for _, r := range body.Reviewers {
		if strings.EqualFold(r, is.User) {
			c.invalid("Review cannot be requested from pull request author.")
			return
		}
		if !validLogin(r) {
			c.invalid(
				"Reviews may only be requested from collaborators. One or more of the users or teams you specified " +
					"is not a collaborator of the " + c.repo.fullName() + " repository.",
			)
			return
		}
	}
	for _, r := range body.Reviewers {
		if !containsFold(is.Pull.Reviewers, r) {
			is.Pull.Reviewers = append(is.Pull.Reviewers, r)
			h.pullEvent(c.repo, c.git, is, "review_requested", c.actor(), obj{"requested_reviewer": h.user(r)})
		}
	}
	for _, t := range body.TeamReviewers {
		if !containsFold(is.Pull.TeamReviewers, t) {
			is.Pull.TeamReviewers = append(is.Pull.TeamReviewers, t)
		}
	}
	c.json(http.StatusCreated, h.renderPull(c.repo, c.git, is, false))
}

func (h *Hub) listReviewers(c *call) {
	is := c.loadPull()
	if is == nil {
		return
	}
	users, teams := []obj{}, []obj{}
	for _, r := range is.Pull.Reviewers {
		users = append(users, h.user(r))
	}
	for _, t := range is.Pull.TeamReviewers {
		teams = append(teams, obj{"slug": t, "name": t})
	}
	c.json(http.StatusOK, obj{"users": users, "teams": teams})
}

func (h *Hub) removeReviewers(c *call) {
	is := c.loadPull()
	if is == nil {
		return
	}
	var body struct {
		Reviewers     []string `json:"reviewers"`
		TeamReviewers []string `json:"team_reviewers"`
	}
	if !c.decode(&body) {
		return
	}
	is.Pull.Reviewers = removeFold(is.Pull.Reviewers, body.Reviewers)
	is.Pull.TeamReviewers = removeFold(is.Pull.TeamReviewers, body.TeamReviewers)
	c.json(http.StatusOK, h.renderPull(c.repo, c.git, is, false))
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func removeFold(list, drop []string) []string {
	var out []string
	for _, x := range list {
		if !containsFold(drop, x) {
			out = append(out, x)
		}
	}
	return out
}
