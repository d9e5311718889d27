package localhub

import (
	"net/http"
	"strconv"
	"time"
)

// maxRepoEvents is how many events a repository keeps: GitHub's events API
// serves at most the latest 300.
const maxRepoEvents = 300

// repoEvent is one entry of a repository's events API: what GitHub lists
// for the changes its webhooks also report.
type repoEvent struct {
	ID      int64     `json:"id"`
	Type    string    `json:"type"` // PushEvent, PullRequestEvent, IssuesEvent, IssueCommentEvent
	Action  string    `json:"action,omitempty"`
	Actor   string    `json:"actor"`
	Created time.Time `json:"created"`
}

// eventTypes are the events API's names of the webhook events it lists;
// check runs and statuses are not in it, as on GitHub.
var eventTypes = map[string]string{
	"push": "PushEvent", "pull_request": "PullRequestEvent", "issues": "IssuesEvent", "issue_comment": "IssueCommentEvent",
}

// recordEvent adds the webhook event to rs's events API, newest last.
// Callers hold h.mu.
func (h *Hub) recordEvent(rs *repoState, event, action, actor string) {
	typ, ok := eventTypes[event]
	if !ok {
		return
	}
	rs.Events = append(rs.Events, &repoEvent{ID: h.st.newID(), Type: typ, Action: action, Actor: actor, Created: h.now()})
	if n := len(rs.Events); n > maxRepoEvents {
		rs.Events = append([]*repoEvent(nil), rs.Events[n-maxRepoEvents:]...)
	}
}

// listRepoEvents serves GET /repos/{owner}/{repo}/events, newest first.
// Its ETag changes with every new event, so a conditional poll is the
// cheapest way to learn that anything happened in a repository.
func (h *Hub) listRepoEvents(c *call) {
	if !c.loadRepo() {
		return
	}
	rs := c.repo
	out := make([]obj, 0, len(rs.Events))
	for i := len(rs.Events) - 1; i >= 0; i-- {
		e := rs.Events[i]
		payload := obj{}
		if e.Action != "" {
			payload["action"] = e.Action
		}
		out = append(out, obj{"id": strconv.FormatInt(e.ID, 10), "type": e.Type, "actor": h.user(e.Actor),
			"repo":    obj{"id": rs.ID, "name": rs.fullName(), "url": c.base() + "/repos/" + rs.fullName()},
			"payload": payload, "public": !rs.Private, "created_at": ts(e.Created)})
	}
	c.json(http.StatusOK, paginate(c, out))
}
