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
	return obj{"login": login, "id": id, "node_id": nodeID("U", id), "type": typ, "site_admin": false,
		"url": h.baseURL + "/users/" + login, "html_url": h.baseURL + "/" + login}
}

func (h *Hub) repoURL(rs *repoState) string { return h.baseURL + "/repos/" + rs.fullName() }

func (h *Hub) renderRepo(rs *repoState) obj {
	vis := "public"
	if rs.Private {
		vis = "private"
	}
	return obj{
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
		"events": []string{"push", "pull_request", "check_run"}}
}

// renderGitCommit is the Git database shape (git/commits).
func (h *Hub) renderGitCommit(rs *repoState, c *commitObject) obj {
	parents := []obj{}
	for _, p := range c.Parents {
		parents = append(parents, obj{"sha": p, "url": h.repoURL(rs) + "/git/commits/" + p, "html_url": h.baseURL + "/" + rs.fullName() + "/commit/" + p})
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
		return obj{"verified": true, "reason": "valid", "signature": nil, "payload": nil}
	case c.Signature != "":
		return obj{"verified": false, "reason": "unknown_key", "signature": c.Signature, "payload": nil}
	default:
		return obj{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil}
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
	return obj{"sha": c.SHA, "node_id": nodeID("C", userID(c.SHA)), "commit": gc, "parents": parents,
		"url": h.repoURL(rs) + "/commits/" + c.SHA, "html_url": h.baseURL + "/" + rs.fullName() + "/commit/" + c.SHA,
		"author": nil, "committer": nil}
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
	}
	if is.Pull != nil {
		o["pull_request"] = obj{"url": fmt.Sprintf("%s/pulls/%d", h.repoURL(rs), is.Number),
			"html_url": fmt.Sprintf("%s/%s/pull/%d", h.baseURL, rs.fullName(), is.Number)}
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
		"output": obj{"title": cr.Title, "summary": cr.Summary, "text": cr.Text, "annotations_count": 0},
		"app":    h.renderApp(), "url": fmt.Sprintf("%s/check-runs/%d", h.repoURL(rs), cr.ID),
		"html_url":      fmt.Sprintf("%s/%s/runs/%d", h.baseURL, rs.fullName(), cr.ID),
		"pull_requests": []obj{}}
}

func (h *Hub) renderStatus(cs *commitStatus) obj {
	return obj{"id": cs.ID, "node_id": nodeID("SC", cs.ID), "state": cs.State, "context": cs.Context,
		"description": cs.Description, "target_url": cs.TargetURL, "creator": h.user(cs.Creator),
		"created_at": ts(cs.Created), "updated_at": ts(cs.Updated)}
}
