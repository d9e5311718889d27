package localhub

import (
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
)

// This file renders the hub's state as GitHub's JSON shapes (the fields
// go-github decodes), for REST responses and webhook payloads alike.

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

// userID gives each login a stable id without storing users.
func userID(login string) int64 {
	f := fnv.New32a()
	f.Write([]byte(strings.ToLower(login)))
	return int64(f.Sum32()%90_000_000) + 10_000_000
}

func nodeID(prefix string, id int64) string {
	return prefix + "_" + base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("localhub:%d", id)))
}

func (h *Hub) user(login string) obj {
	if login == "" {
		return nil
	}
	typ := "User"
	if strings.HasSuffix(login, "[bot]") {
		typ = "Bot"
	}
	id := userID(login)
	u := h.baseURL + "/users/" + login
	return obj{"login": login, "id": id, "node_id": nodeID("U", id), "type": typ, "site_admin": false,
		"url": u, "html_url": h.baseURL + "/" + login, "avatar_url": h.baseURL + "/avatars/" + login, "gravatar_id": "",
		"events_url": u + "/events{/privacy}", "followers_url": u + "/followers",
		"following_url": u + "/following{/other_user}", "gists_url": u + "/gists{/gist_id}", "organizations_url": u + "/orgs",
		"received_events_url": u + "/received_events", "repos_url": u + "/repos",
		"starred_url": u + "/starred{/owner}{/repo}", "subscriptions_url": u + "/subscriptions"}
}

func (h *Hub) repoURL(rs *repoState) string { return h.baseURL + "/repos/" + rs.fullName() }

func (h *Hub) renderRepo(rs *repoState) obj {
	vis := "public"
	if rs.Private {
		vis = "private"
	}
	out := obj{
		"id": rs.ID, "node_id": nodeID("R", rs.ID), "name": rs.Name, "full_name": rs.fullName(),
		"owner": h.user(rs.Owner), "private": rs.Private, "visibility": vis, "fork": false,
		"default_branch": rs.DefaultBranch, "allow_auto_merge": rs.AllowAutoMerge,
		"allow_merge_commit": rs.AllowMerge, "allow_squash_merge": rs.AllowSquash, "allow_rebase_merge": rs.AllowRebase,
		"delete_branch_on_merge": false, "archived": false, "disabled": false,
		"url": h.repoURL(rs), "html_url": h.baseURL + "/" + rs.fullName(),
		"clone_url": h.baseURL + "/" + rs.fullName() + ".git", "git_url": h.baseURL + "/" + rs.fullName() + ".git",
		"created_at": ts(rs.Created), "updated_at": ts(rs.Created), "pushed_at": ts(rs.Created),
		"permissions": obj{"admin": false, "maintain": false, "push": true, "triage": true, "pull": true},
	}
	// The rest of GitHub's full repository: URL templates, counts and
	// settings the hub does not model.
	u := h.repoURL(rs)
	for k, v := range map[string]string{
		"archive_url": "/{archive_format}{/ref}", "assignees_url": "/assignees{/user}", "blobs_url": "/git/blobs{/sha}",
		"branches_url": "/branches{/branch}", "collaborators_url": "/collaborators{/collaborator}",
		"comments_url": "/comments{/number}", "commits_url": "/commits{/sha}", "compare_url": "/compare/{base}...{head}",
		"contents_url": "/contents/{+path}", "contributors_url": "/contributors", "deployments_url": "/deployments",
		"downloads_url": "/downloads", "events_url": "/events", "forks_url": "/forks",
		"git_commits_url": "/git/commits{/sha}", "git_refs_url": "/git/refs{/sha}", "git_tags_url": "/git/tags{/sha}",
		"hooks_url": "/hooks", "issue_comment_url": "/issues/comments{/number}",
		"issue_events_url": "/issues/events{/number}", "issues_url": "/issues{/number}", "keys_url": "/keys{/key_id}",
		"labels_url": "/labels{/name}", "languages_url": "/languages", "merges_url": "/merges",
		"milestones_url": "/milestones{/number}", "notifications_url": "/notifications{?since,all,participating}",
		"pulls_url": "/pulls{/number}", "releases_url": "/releases{/id}", "stargazers_url": "/stargazers",
		"statuses_url": "/statuses/{sha}", "subscribers_url": "/subscribers", "subscription_url": "/subscription",
		"tags_url": "/tags", "teams_url": "/teams", "trees_url": "/git/trees{/sha}",
	} {
		out[k] = u + v
	}
	for _, k := range []string{
		"forks", "forks_count", "open_issues", "open_issues_count", "size",
		"stargazers_count", "watchers", "watchers_count", "network_count", "subscribers_count",
	} {
		out[k] = 0
	}
	for k, v := range map[string]bool{
		"has_issues": true, "has_projects": false, "has_wiki": false, "has_pages": false, "has_discussions": false,
	} {
		out[k] = v
	}
	out["description"], out["homepage"], out["language"], out["mirror_url"], out["license"] = nil, nil, nil, nil, nil
	out["has_downloads"] = false
	out["ssh_url"] = "git@localhost:" + rs.fullName() + ".git"
	out["svn_url"] = h.baseURL + "/" + rs.fullName()
	return out
}

func (h *Hub) renderInstallation(inst *installation) obj {
	return obj{
		"id": inst.ID, "app_id": h.st.App.ID, "app_slug": h.st.App.Slug, "target_type": "Organization",
		"account": h.user(inst.Account), "repository_selection": "all",
		"permissions": h.permissionsObj(), "events": []string{"push", "pull_request", "check_run"},
		"access_tokens_url": fmt.Sprintf("%s/app/installations/%d/access_tokens", h.baseURL, inst.ID),
		"repositories_url":  h.baseURL + "/installation/repositories",
		"created_at":        ts(inst.Created), "updated_at": ts(inst.Created),
		"suspended_at": tsOrNil(inst.SuspendedAt), "suspended_by": suspendedBy(h, inst),
		"target_id": userID(inst.Account), "single_file_name": nil,
		"html_url": fmt.Sprintf("%s/organizations/%s/settings/installations/%d", h.baseURL, inst.Account, inst.ID),
	}
}

func tsOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func suspendedBy(h *Hub, inst *installation) any {
	if inst.SuspendedAt == nil {
		return nil
	}
	return h.user(inst.Account)
}

func (h *Hub) renderApp() obj {
	a := h.st.App
	return obj{"id": a.ID, "slug": a.Slug, "node_id": nodeID("A", a.ID), "name": a.Name, "owner": h.user(a.Owner),
		"html_url": h.baseURL + "/apps/" + a.Slug, "permissions": h.permissionsObj(),
		"events": []string{"push", "pull_request", "check_run"}, "description": nil, "external_url": h.baseURL,
		"created_at": ts(time.Unix(0, 0).UTC()), "updated_at": ts(time.Unix(0, 0).UTC())}
}

// renderGitCommit is the Git database shape (git/commits).
func (h *Hub) renderGitCommit(rs *repoState, c *commitObject) obj {
	parents := []obj{}
	for _, p := range c.Parents {
		parents = append(
			parents,
			obj{
				"sha":      p,
				"url":      h.repoURL(rs) + "/git/commits/" + p,
				"html_url": h.baseURL + "/" + rs.fullName() + "/commit/" + p,
			},
		)
	}
	return obj{
		"sha": c.SHA, "node_id": nodeID("C", int64(userID(c.SHA))), "url": h.repoURL(rs) + "/git/commits/" + c.SHA,
		"html_url": h.baseURL + "/" + rs.fullName() + "/commit/" + c.SHA,
		"author":   renderPerson(c.Author), "committer": renderPerson(c.Committer), "message": c.Message,
		"tree":    obj{"sha": c.Tree, "url": h.repoURL(rs) + "/git/trees/" + c.Tree},
		"parents": parents, "verification": h.verification(rs, c),
	}
}

func renderPerson(p person) obj {
	return obj{"name": p.Name, "email": p.Email, "date": ts(p.When)}
}

// verification reports what GitHub would: commits it made for the App
// through the API are signed and verified; anything else is unsigned, or
// carries a signature the hub cannot check.
func (h *Hub) verification(rs *repoState, c *commitObject) obj {
	switch {
	case rs.Verified[c.SHA]:
		return obj{"verified": true, "reason": "valid", "signature": nil, "payload": nil, "verified_at": ts(c.Committer.When)}
	case c.Signature != "":
		return obj{"verified": false, "reason": "unknown_key", "signature": c.Signature, "payload": nil, "verified_at": nil}
	default:
		return obj{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil}
	}
}

// renderRepoCommit is the repository commit shape (commits/{ref}).
func (h *Hub) renderRepoCommit(rs *repoState, c *commitObject) obj {
	gc := h.renderGitCommit(rs, c)
	parents := gc["parents"]
	delete(gc, "sha")
	delete(gc, "parents")
	delete(gc, "html_url")
	delete(gc, "node_id")
	gc["comment_count"] = 0
	return obj{"sha": c.SHA, "node_id": nodeID("C", userID(c.SHA)), "commit": gc, "parents": parents,
		"url": h.repoURL(rs) + "/commits/" + c.SHA, "html_url": h.baseURL + "/" + rs.fullName() + "/commit/" + c.SHA,
		"comments_url": h.repoURL(rs) + "/commits/" + c.SHA + "/comments",
		"author":       nil, "committer": nil}
}

func (h *Hub) renderLabel(rs *repoState, l *label) obj {
	return obj{"id": l.ID, "node_id": nodeID("LA", l.ID), "name": l.Name, "color": l.Color, "description": l.Description,
		"default": false, "url": h.repoURL(rs) + "/labels/" + l.Name}
}

func (h *Hub) renderIssueLabels(rs *repoState, names []string) []obj {
	out := []obj{}
	for _, n := range names {
		if l := findLabel(rs, n); l != nil {
			out = append(out, h.renderLabel(rs, l))
		}
	}
	return out
}

func (h *Hub) renderIssue(rs *repoState, is *issue) obj {
	assignees := []obj{}
	for _, a := range is.Assignees {
		assignees = append(assignees, h.user(a))
	}
	comments := 0
	for _, c := range rs.Comments {
		if c.Issue == is.Number {
			comments++
		}
	}
	o := obj{
		"id": is.ID, "node_id": nodeID("I", is.ID), "number": is.Number, "title": is.Title, "body": is.Body,
		"state": is.State, "user": h.user(is.User), "labels": h.renderIssueLabels(rs, is.Labels),
		"assignees": assignees, "comments": comments, "locked": false,
		"created_at": ts(is.Created), "updated_at": ts(is.Updated), "closed_at": tsPtr(is.Closed),
		"url":      fmt.Sprintf("%s/issues/%d", h.repoURL(rs), is.Number),
		"html_url": fmt.Sprintf("%s/%s/issues/%d", h.baseURL, rs.fullName(), is.Number),
		"assignee": nil, "milestone": nil, "repository_url": h.repoURL(rs),
		"comments_url": fmt.Sprintf("%s/issues/%d/comments", h.repoURL(rs), is.Number),
		"events_url":   fmt.Sprintf("%s/issues/%d/events", h.repoURL(rs), is.Number),
		"labels_url":   fmt.Sprintf("%s/issues/%d/labels{/name}", h.repoURL(rs), is.Number),
	}
	if len(is.Assignees) > 0 {
		o["assignee"] = h.user(is.Assignees[0])
	}
	if is.Pull != nil {
		pullHTML := fmt.Sprintf("%s/%s/pull/%d", h.baseURL, rs.fullName(), is.Number)
		o["pull_request"] = obj{"url": fmt.Sprintf("%s/pulls/%d", h.repoURL(rs), is.Number),
			"html_url": pullHTML, "diff_url": pullHTML + ".diff", "patch_url": pullHTML + ".patch"}
		o["html_url"] = fmt.Sprintf("%s/%s/pull/%d", h.baseURL, rs.fullName(), is.Number)
	}
	return o
}

func (h *Hub) renderComment(rs *repoState, c *comment) obj {
	return obj{"id": c.ID, "node_id": nodeID("IC", c.ID), "body": c.Body, "user": h.user(c.User),
		"created_at": ts(c.Created), "updated_at": ts(c.Updated),
		"url":       fmt.Sprintf("%s/issues/comments/%d", h.repoURL(rs), c.ID),
		"html_url":  fmt.Sprintf("%s/%s/issues/%d#issuecomment-%d", h.baseURL, rs.fullName(), c.Issue, c.ID),
		"issue_url": fmt.Sprintf("%s/issues/%d", h.repoURL(rs), c.Issue), "author_association": "NONE"}
}

func (h *Hub) renderCheckRun(rs *repoState, cr *checkRun) obj {
	var concl any
	if cr.Conclusion != "" {
		concl = cr.Conclusion
	}
	return obj{"id": cr.ID, "node_id": nodeID("CR", cr.ID), "name": cr.Name, "head_sha": cr.HeadSHA, "status": cr.Status,
		"conclusion": concl, "details_url": cr.DetailsURL, "external_id": cr.ExternalID,
		"started_at": ts(cr.StartedAt), "completed_at": tsPtr(cr.CompletedAt),
		"output": obj{"title": cr.Title, "summary": cr.Summary, "text": cr.Text, "annotations_count": 0,
			"annotations_url": fmt.Sprintf("%s/check-runs/%d/annotations", h.repoURL(rs), cr.ID)},
		"check_suite": obj{"id": cr.ID},
		"app":         h.renderApp(), "url": fmt.Sprintf("%s/check-runs/%d", h.repoURL(rs), cr.ID),
		"html_url":      fmt.Sprintf("%s/%s/runs/%d", h.baseURL, rs.fullName(), cr.ID),
		"pull_requests": []obj{}}
}

func (h *Hub) renderStatus(cs *commitStatus) obj {
	return obj{"id": cs.ID, "node_id": nodeID("SC", cs.ID), "state": cs.State, "context": cs.Context,
		"description": cs.Description, "target_url": cs.TargetURL, "creator": h.user(cs.Creator),
		"created_at": ts(cs.Created), "updated_at": ts(cs.Updated)}
}

// fileURLs adds GitHub's blob, contents and raw URLs to a diff's files at sha.
func (h *Hub) fileURLs(rs *repoState, sha string, files []map[string]any) {
	for _, f := range files {
		name, _ := f["filename"].(string)
		f["blob_url"] = h.baseURL + "/" + rs.fullName() + "/blob/" + sha + "/" + name
		f["raw_url"] = h.baseURL + "/" + rs.fullName() + "/raw/" + sha + "/" + name
		f["contents_url"] = h.repoURL(rs) + "/contents/" + name + "?ref=" + sha
	}
}
