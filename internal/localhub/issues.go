package localhub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// loadIssue finds issue or pull request {number}; it answers 404 itself.
func (c *call) loadIssue() *issue {
	if !c.loadRepo() {
		return nil
	}
	n, err := strconv.Atoi(c.p["number"])
	if err == nil {
		for _, is := range c.repo.Issues {
			if is.Number == n {
				return is
			}
		}
	}
	c.fail(http.StatusNotFound, "Not Found")
	return nil
}

func findLabel(rs *repoState, name string) *label {
	for _, l := range rs.Labels {
		if strings.EqualFold(l.Name, name) {
			return l
		}
	}
	return nil
}

// ensureLabel returns the repository label, creating it as GitHub does when
// an unknown label is added to an issue.
func (h *Hub) ensureLabel(rs *repoState, name string) *label {
	if l := findLabel(rs, name); l != nil {
		return l
	}
	l := &label{ID: h.st.newID(), Name: name, Color: "ededed"}
	rs.Labels = append(rs.Labels, l)
	return l
}

func (h *Hub) issueEvent(rs *repoState, is *issue, action, actor string, extra obj) {
	if is.Pull != nil {
		h.pullEvent(rs, h.gitFor(rs), is, action, actor, extra)
		return
	}
	p := h.payload(rs, actor)
	p["issue"] = h.renderIssue(rs, is)
	for k, v := range extra {
		p[k] = v
	}
	h.recordEvent(rs, "issues", action, actor)
	h.hooks.enqueue("issues", action, p)
}

func (h *Hub) listIssues(c *call) {
	if !c.loadRepo() {
		return
	}
	state := c.query("state")
	if state == "" {
		state = "open"
	}
	var want []string
	if l := c.query("labels"); l != "" {
		want = strings.Split(l, ",")
	}
	var list []*issue
	for _, is := range c.repo.Issues {
		if state != "all" && is.State != state {
			continue
		}
		if cr := c.query("creator"); cr != "" && !strings.EqualFold(cr, is.User) {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && containsFold(is.Labels, strings.TrimSpace(w))
		}
		if ok {
			list = append(list, is)
		}
	}
	asc := c.query("direction") == "asc"
	sort.SliceStable(list, func(i, j int) bool {
		if asc {
			return list[i].Number < list[j].Number
		}
		return list[i].Number > list[j].Number
	})
	out := []obj{}
	for _, is := range list {
		out = append(out, h.renderIssue(c.repo, is))
	}
	c.json(http.StatusOK, paginate(c, out))
}

func (h *Hub) getIssue(c *call) {
	if is := c.loadIssue(); is != nil {
		c.json(http.StatusOK, h.renderIssue(c.repo, is))
	}
}

func (h *Hub) createIssue(c *call) {
	if !c.loadRepo() {
		return
	}
	var body struct {
		Title     *string  `json:"title"`
		Body      string   `json:"body"`
		Labels    []string `json:"labels"`
		Assignees []string `json:"assignees"`
	}
	if !c.decode(&body) {
		return
	}
	if body.Title == nil || *body.Title == "" {
		c.invalid("Validation Failed", obj{"resource": "Issue", "field": "title", "code": "missing_field"})
		return
	}
	if c.bodyTooLong("Issue", body.Body) {
		return
	}
	now := h.now()
	is := &issue{ID: h.st.newID(), Number: c.repo.NextNumber, Title: *body.Title, Body: body.Body, State: "open",
		User: c.actor(), Assignees: body.Assignees, Created: now, Updated: now}
	for _, l := range body.Labels {
		is.Labels = append(is.Labels, h.ensureLabel(c.repo, l).Name)
	}
	c.repo.NextNumber++
	c.repo.Issues = append(c.repo.Issues, is)
	h.issueEvent(c.repo, is, "opened", c.actor(), nil)
	c.json(http.StatusCreated, h.renderIssue(c.repo, is))
}

func (h *Hub) updateIssue(c *call) {
	is := c.loadIssue()
	if is == nil {
		return
	}
	var body struct {
		Title     *string   `json:"title"`
		Body      *string   `json:"body"`
		State     *string   `json:"state"`
		Labels    *[]string `json:"labels"`
		Assignees *[]string `json:"assignees"`
	}
	if !c.decode(&body) {
		return
	}
	if body.State != nil && *body.State != "open" && *body.State != "closed" {
		c.invalid("Validation Failed", obj{"resource": "Issue", "field": "state", "code": "invalid"})
		return
	}
	if body.Body != nil && c.bodyTooLong("Issue", *body.Body) {
		return
	}
	action := ""
	if body.Title != nil {
		is.Title, action = *body.Title, "edited"
	}
	if body.Body != nil {
		is.Body, action = *body.Body, "edited"
	}
	if body.Labels != nil {
		is.Labels = nil
		for _, l := range *body.Labels {
			is.Labels = append(is.Labels, h.ensureLabel(c.repo, l).Name)
		}
	}
	if body.Assignees != nil {
		is.Assignees = *body.Assignees
	}
	if body.State != nil && *body.State != is.State {
		if *body.State == "closed" {
			h.closeIssue(is)
			action = "closed"
		} else if is.Pull == nil || !is.Pull.Merged {
			is.State, is.Closed, action = "open", nil, "reopened"
		}
	}
	is.Updated = h.now()
	if action != "" {
		h.issueEvent(c.repo, is, action, c.actor(), nil)
	}
	c.json(http.StatusOK, h.renderIssue(c.repo, is))
}

// --- labels ---

func (h *Hub) listRepoLabels(c *call) {
	if !c.loadRepo() {
		return
	}
	out := []obj{}
	for _, l := range c.repo.Labels {
		out = append(out, h.renderLabel(c.repo, l))
	}
	c.json(http.StatusOK, paginate(c, out))
}

func (h *Hub) getRepoLabel(c *call) {
	if !c.loadRepo() {
		return
	}
	if l := findLabel(c.repo, c.p["name"]); l != nil {
		c.json(http.StatusOK, h.renderLabel(c.repo, l))
		return
	}
	c.fail(http.StatusNotFound, "Not Found")
}

func (h *Hub) createRepoLabel(c *call) {
	if !c.loadRepo() {
		return
	}
	var body struct {
		Name        string `json:"name"`
		Color       string `json:"color"`
		Description string `json:"description"`
	}
	if !c.decode(&body) {
		return
	}
	if body.Name == "" {
		c.invalid("Validation Failed", obj{"resource": "Label", "field": "name", "code": "missing_field"})
		return
	}
	if findLabel(c.repo, body.Name) != nil {
		c.invalid("Validation Failed", obj{"resource": "Label", "field": "name", "code": "already_exists"})
		return
	}
	if body.Color == "" {
		body.Color = "ededed"
	}
	l := &label{
		ID:          h.st.newID(),
		Name:        body.Name,
		Color:       strings.TrimPrefix(body.Color, "#"),
		Description: body.Description,
	}
	c.repo.Labels = append(c.repo.Labels, l)
	c.json(http.StatusCreated, h.renderLabel(c.repo, l))
}

func (h *Hub) listIssueLabels(c *call) {
	if is := c.loadIssue(); is != nil {
		c.json(http.StatusOK, paginate(c, h.renderIssueLabels(c.repo, is.Labels)))
	}
}

// decodeLabels accepts both shapes GitHub accepts: a bare array of names
// (what go-github sends) and {"labels": [...]}.
func (c *call) decodeLabels() ([]string, bool) {
	var raw json.RawMessage
	if !c.decode(&raw) {
		return nil, false
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err == nil {
		return names, true
	}
	var wrapped struct {
		Labels []string `json:"labels"`
	}
	if err := json.Unmarshal(raw, &wrapped); err != nil || wrapped.Labels == nil {
		c.invalid("Invalid request.\n\nFor 'links/0/schema', " + string(raw) + " is not an array.")
		return nil, false
	}
	return wrapped.Labels, true
}

func (h *Hub) addIssueLabels(c *call) {
	is := c.loadIssue()
	if is == nil {
		return
	}
	names, ok := c.decodeLabels()
	if !ok {
		return
	}
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			c.invalid("Validation Failed", obj{"resource": "Label", "field": "name", "code": "invalid", "value": n})
			return
		}
	}
	for _, n := range names {
		l := h.ensureLabel(c.repo, n)
		if !containsFold(is.Labels, l.Name) {
			is.Labels = append(is.Labels, l.Name)
			h.issueEvent(c.repo, is, "labeled", c.actor(), obj{"label": h.renderLabel(c.repo, l)})
		}
	}
	is.Updated = h.now()
	c.json(http.StatusOK, h.renderIssueLabels(c.repo, is.Labels))
}

func (h *Hub) replaceIssueLabels(c *call) {
	is := c.loadIssue()
	if is == nil {
		return
	}
	names, ok := c.decodeLabels()
	if !ok {
		return
	}
	is.Labels = nil
	for _, n := range names {
		is.Labels = append(is.Labels, h.ensureLabel(c.repo, n).Name)
	}
	c.json(http.StatusOK, h.renderIssueLabels(c.repo, is.Labels))
}

func (h *Hub) removeIssueLabel(c *call) {
	is := c.loadIssue()
	if is == nil {
		return
	}
	name := c.p["name"]
	if !containsFold(is.Labels, name) {
		c.fail(http.StatusNotFound, "Label does not exist")
		return
	}
	is.Labels = removeFold(is.Labels, []string{name})
	if l := findLabel(c.repo, name); l != nil {
		h.issueEvent(c.repo, is, "unlabeled", c.actor(), obj{"label": h.renderLabel(c.repo, l)})
	}
	c.json(http.StatusOK, h.renderIssueLabels(c.repo, is.Labels))
}

// --- comments ---

func (h *Hub) listComments(c *call) {
	is := c.loadIssue()
	if is == nil {
		return
	}
	out := []obj{}
	for _, cm := range c.repo.Comments {
		if cm.Issue == is.Number {
			out = append(out, h.renderComment(c.repo, cm))
		}
	}
	c.json(http.StatusOK, paginate(c, out))
}

func (h *Hub) createComment(c *call) {
	is := c.loadIssue()
	if is == nil {
		return
	}
	text, ok := c.decodeCommentBody()
	if !ok {
		return
	}
	if c.bodyTooLong("IssueComment", text) {
		return
	}
	now := h.now()
	cm := &comment{ID: h.st.newID(), Issue: is.Number, Body: text, User: c.actor(), Created: now, Updated: now}
	c.repo.Comments = append(c.repo.Comments, cm)
	p := h.payload(c.repo, c.actor())
	p["issue"], p["comment"] = h.renderIssue(c.repo, is), h.renderComment(c.repo, cm)
	h.recordEvent(c.repo, "issue_comment", "created", c.actor())
	h.hooks.enqueue("issue_comment", "created", p)
	c.json(http.StatusCreated, h.renderComment(c.repo, cm))
}

// MaxBodyChars is GitHub's limit on the body of an issue, a pull request
// or a comment, in characters.
const MaxBodyChars = 65536

// bodyTooLong answers 422, as GitHub does, for a body over MaxBodyChars.
func (c *call) bodyTooLong(resource, text string) bool {
	if utf8.RuneCountInString(text) <= MaxBodyChars {
		return false
	}
	c.invalid("Validation Failed", obj{"resource": resource, "field": "body", "code": "custom",
		"message": fmt.Sprintf("body is too long (maximum is %d characters)", MaxBodyChars)})
	return true
}

// decodeCommentBody reads a comment's request body, whose body must be
// given and not empty.
func (c *call) decodeCommentBody() (string, bool) {
	var body struct {
		Body *string `json:"body"`
	}
	if !c.decode(&body) {
		return "", false
	}
	if body.Body == nil || *body.Body == "" {
		c.invalid("Validation Failed", obj{"resource": "IssueComment", "field": "body", "code": "missing_field"})
		return "", false
	}
	return *body.Body, true
}

func (c *call) loadComment() *comment {
	if !c.loadRepo() {
		return nil
	}
	id, _ := strconv.ParseInt(c.p["id"], 10, 64)
	for _, cm := range c.repo.Comments {
		if cm.ID == id {
			return cm
		}
	}
	c.fail(http.StatusNotFound, "Not Found")
	return nil
}

func (h *Hub) getComment(c *call) {
	if cm := c.loadComment(); cm != nil {
		c.json(http.StatusOK, h.renderComment(c.repo, cm))
	}
}

func (h *Hub) updateComment(c *call) {
	cm := c.loadComment()
	if cm == nil {
		return
	}
	text, ok := c.decodeCommentBody()
	if !ok || c.bodyTooLong("IssueComment", text) {
		return
	}
	cm.Body, cm.Updated = text, h.now()
	c.json(http.StatusOK, h.renderComment(c.repo, cm))
}

func (h *Hub) deleteComment(c *call) {
	cm := c.loadComment()
	if cm == nil {
		return
	}
	for i, x := range c.repo.Comments {
		if x == cm {
			c.repo.Comments = append(c.repo.Comments[:i], c.repo.Comments[i+1:]...)
			break
		}
	}
	c.json(http.StatusNoContent, nil)
}
