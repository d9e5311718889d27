package localhub

import (
	"net/http"
	"strconv"
	"time"
)

var (
	checkStatuses = map[string]bool{
		"queued":      true,
		"in_progress": true,
		"completed":   true,
		"waiting":     true,
		"requested":   true,
		"pending":     true,
	}
	checkConclusions = map[string]bool{
		"action_required": true,
		"cancelled":       true,
		"failure":         true,
		"neutral":         true,
		"success":         true,
		"skipped":         true,
		"stale":           true,
		"timed_out":       true,
	}
	statusStates = map[string]bool{"error": true, "failure": true, "pending": true, "success": true}
)

type checkRunBody struct {
	Name        *string    `json:"name"`
	HeadSHA     *string    `json:"head_sha"`
	DetailsURL  *string    `json:"details_url"`
	ExternalID  *string    `json:"external_id"`
	Status      *string    `json:"status"`
	Conclusion  *string    `json:"conclusion"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
	Output      *struct {
		Title   *string `json:"title"`
		Summary *string `json:"summary"`
		Text    *string `json:"text"`
	} `json:"output"`
}

// apply validates the body against the run and copies it in; it answers 422 itself.
func (c *call) applyCheckRun(cr *checkRun, b *checkRunBody) bool {
	if b.Name != nil {
		cr.Name = *b.Name
	}
	if b.DetailsURL != nil {
		cr.DetailsURL = *b.DetailsURL
	}
	if b.ExternalID != nil {
		cr.ExternalID = *b.ExternalID
	}
	if b.Status != nil {
		if !checkStatuses[*b.Status] {
			c.invalid("Invalid request.\n\nstatus is not included in the list")
			return false
		}
		cr.Status = *b.Status
	}
	if b.Conclusion != nil {
		if !checkConclusions[*b.Conclusion] {
			c.invalid("Invalid request.\n\nconclusion is not included in the list")
			return false
		}
		// GitHub: providing a conclusion completes the run.
		cr.Conclusion, cr.Status = *b.Conclusion, "completed"
	}
	if cr.Status == "completed" && cr.Conclusion == "" {
		c.invalid("Invalid request.\n\nNo conclusion provided. A conclusion is required when status is completed.")
		return false
	}
	if b.StartedAt != nil {
		cr.StartedAt = *b.StartedAt
	}
	if cr.Status == "completed" && cr.CompletedAt == nil {
		now := c.h.now()
		if b.CompletedAt != nil {
			now = *b.CompletedAt
		}
		cr.CompletedAt = &now
	}
	if o := b.Output; o != nil {
		if o.Title == nil || o.Summary == nil {
			c.invalid("Invalid request.\n\n\"title\" and \"summary\" weren't supplied.")
			return false
		}
		// GitHub's limit on output.summary and output.text.
		if len(*o.Summary) > 65535 || (o.Text != nil && len(*o.Text) > 65535) {
			c.invalid("Invalid request.\n\nOnly 65535 characters are allowed; 65536 were supplied.")
			return false
		}
		cr.Title, cr.Summary = *o.Title, *o.Summary
		if o.Text != nil {
			cr.Text = *o.Text
		}
	}
	return true
}

func (h *Hub) checkRunEvent(c *call, cr *checkRun, action string) {
	p := h.payload(c.repo, c.actor())
	p["check_run"] = h.renderCheckRun(c.repo, cr)
	h.hooks.enqueue("check_run", action, p)
}

func (h *Hub) createCheckRun(c *call) {
	if !c.loadRepo() {
		return
	}
	var b checkRunBody
	if !c.decode(&b) {
		return
	}
	if b.Name == nil || *b.Name == "" || b.HeadSHA == nil {
		c.invalid("Invalid request.\n\n\"name\" and \"head_sha\" are required.")
		return
	}
	sha, err := c.git.resolveCommit(*b.HeadSHA)
	if err != nil || sha != *b.HeadSHA {
		c.invalid("No commit found for SHA: " + *b.HeadSHA)
		return
	}
	cr := &checkRun{ID: h.st.newID(), HeadSHA: sha, Status: "queued", StartedAt: h.now(), App: h.st.App.ID}
	if !c.applyCheckRun(cr, &b) {
		return
	}
	c.repo.CheckRuns = append(c.repo.CheckRuns, cr)
	h.checkRunEvent(c, cr, "created")
	if cr.Status == "completed" {
		h.checkRunEvent(c, cr, "completed")
	}
	h.tryAutoMerge(c.repo, c.git)
	c.json(http.StatusCreated, h.renderCheckRun(c.repo, cr))
}

func (c *call) loadCheckRun() *checkRun {
	if !c.loadRepo() {
		return nil
	}
	id, _ := strconv.ParseInt(c.p["id"], 10, 64)
	for _, cr := range c.repo.CheckRuns {
		if cr.ID == id {
			return cr
		}
	}
	c.fail(http.StatusNotFound, "Not Found")
	return nil
}

func (h *Hub) getCheckRun(c *call) {
	if cr := c.loadCheckRun(); cr != nil {
		c.json(http.StatusOK, h.renderCheckRun(c.repo, cr))
	}
}

func (h *Hub) updateCheckRun(c *call) {
	cr := c.loadCheckRun()
	if cr == nil {
		return
	}
	var b checkRunBody
	if !c.decode(&b) {
		return
	}
	if b.HeadSHA != nil {
		c.invalid("Invalid request.\n\n\"head_sha\" is not a permitted key.")
		return
	}
	updated := *cr
	wasDone := cr.Status == "completed"
	if !c.applyCheckRun(&updated, &b) {
		return
	}
	*cr = updated
	if cr.Status == "completed" && !wasDone {
		h.checkRunEvent(c, cr, "completed")
	}
	h.tryAutoMerge(c.repo, c.git)
	c.json(http.StatusOK, h.renderCheckRun(c.repo, cr))
}

func (h *Hub) listCheckRunsForRef(c *call) {
	if !c.loadRepo() {
		return
	}
	sha, err := c.git.resolveCommit(c.p["ref"])
	if err != nil {
		if sha, err = c.git.resolveCommit("refs/heads/" + c.p["ref"]); err != nil {
			c.invalid("No commit found for SHA: " + c.p["ref"])
			return
		}
	}
	// filter=latest (the default) keeps the newest run of each name.
	latest := c.query("filter") != "all"
	seen := map[string]bool{}
	out := []obj{}
	for i := len(c.repo.CheckRuns) - 1; i >= 0; i-- {
		cr := c.repo.CheckRuns[i]
		if cr.HeadSHA != sha {
			continue
		}
		if n := c.query("check_name"); n != "" && cr.Name != n {
			continue
		}
		if s := c.query("status"); s != "" && cr.Status != s {
			continue
		}
		if latest && seen[cr.Name] {
			continue
		}
		seen[cr.Name] = true
		out = append(out, h.renderCheckRun(c.repo, cr))
	}
	c.json(http.StatusOK, obj{"total_count": len(out), "check_runs": paginate(c, out)})
}

// --- commit statuses ---

func (h *Hub) createStatus(c *call) {
	if !c.loadRepo() {
		return
	}
	sha, err := c.git.resolveCommit(c.p["sha"])
	if err != nil {
		c.invalid("No commit found for SHA: " + c.p["sha"])
		return
	}
	var b struct {
		State       string `json:"state"`
		TargetURL   string `json:"target_url"`
		Description string `json:"description"`
		Context     string `json:"context"`
	}
	if !c.decode(&b) {
		return
	}
	if !statusStates[b.State] {
		c.invalid(
			"Validation Failed",
			obj{"resource": "Status", "field": "state", "code": "custom", "message": "state is not included in the list"},
		)
		return
	}
	if b.Context == "" {
		b.Context = "default"
	}
	now := h.now()
	cs := &commitStatus{ID: h.st.newID(), SHA: sha, State: b.State, Context: b.Context, Description: b.Description,
		TargetURL: b.TargetURL, Creator: c.actor(), Created: now, Updated: now}
	c.repo.Statuses = append(c.repo.Statuses, cs)
	p := h.payload(c.repo, c.actor())
	p["sha"], p["state"], p["context"] = sha, cs.State, cs.Context
	p["description"], p["target_url"] = cs.Description, cs.TargetURL
	h.hooks.enqueue("status", "", p)
	h.tryAutoMerge(c.repo, c.git)
	c.json(http.StatusCreated, h.renderStatus(cs))
}

func (c *call) refSHA() (string, bool) {
	sha, err := c.git.resolveCommit(c.p["ref"])
	if err != nil {
		if sha, err = c.git.resolveCommit("refs/heads/" + c.p["ref"]); err != nil {
			c.invalid("No commit found for SHA: " + c.p["ref"])
			return "", false
		}
	}
	return sha, true
}

func (h *Hub) listStatuses(c *call) {
	if !c.loadRepo() {
		return
	}
	sha, ok := c.refSHA()
	if !ok {
		return
	}
	out := []obj{}
	for i := len(c.repo.Statuses) - 1; i >= 0; i-- {
		if cs := c.repo.Statuses[i]; cs.SHA == sha {
			out = append(out, h.renderStatus(cs))
		}
	}
	c.json(http.StatusOK, paginate(c, out))
}

// combinedStatus follows GitHub: failure if any latest status failed or
// errored, pending if any is pending or there are none, success otherwise.
func (h *Hub) combinedStatus(c *call) {
	if !c.loadRepo() {
		return
	}
	sha, ok := c.refSHA()
	if !ok {
		return
	}
	latest := map[string]*commitStatus{}
	var order []string
	for _, cs := range c.repo.Statuses {
		if cs.SHA != sha {
			continue
		}
		if _, ok := latest[cs.Context]; !ok {
			order = append(order, cs.Context)
		}
		latest[cs.Context] = cs
	}
	state := "success"
	if len(order) == 0 {
		state = "pending"
	}
	list := []obj{}
	for _, ctx := range order {
		cs := latest[ctx]
		switch {
		case cs.State == "failure" || cs.State == "error":
			state = "failure"
		case cs.State == "pending" && state != "failure":
			state = "pending"
		}
		list = append(list, h.renderStatus(cs))
	}
	c.json(http.StatusOK, obj{"state": state, "sha": sha, "total_count": len(list), "statuses": list,
		"repository": h.renderRepo(c.repo), "commit_url": h.repoURL(c.repo) + "/commits/" + sha})
}
