package server

import (
	"encoding/json"
	"net/http"
)

// Webhook result labels, for metrics and logs.
const (
	resultQueued       = "queued"
	resultIgnored      = "ignored"
	resultDuplicate    = "duplicate"
	resultUnauthorized = "unauthorized"
	resultTooLarge     = "too-large"
	resultBadRequest   = "bad-request"
	resultUnavailable  = "unavailable"
	resultError        = "error"
)

// events are the X-GitHub-Event values counted under their own name; any
// other is counted as "other", so that an unsigned request cannot add label
// values.
var events = map[string]bool{
	"push": true, "pull_request": true, "check_run": true, "check_suite": true, "issues": true,
	"installation": true, "installation_repositories": true, "ping": true,
}

func eventLabel(e string) string {
	if events[e] {
		return e
	}
	return "other"
}

// maxDeliveryID bounds a delivery id kept in memory; GitHub's are UUIDs.
const maxDeliveryID = 128

// The parts of GitHub's webhook payloads the server routes on.
type (
	hookRepo struct {
		FullName      string `json:"full_name"`
		DefaultBranch string `json:"default_branch"`
	}
	hookPayload struct {
		Action      string   `json:"action"`
		Repository  hookRepo `json:"repository"`
		Ref         string   `json:"ref"`
		After       string   `json:"after"`
		Deleted     bool     `json:"deleted"`
		Number      int      `json:"number"`
		PullRequest struct {
			Number int  `json:"number"`
			Merged bool `json:"merged"`
		} `json:"pull_request"`
		CheckRun struct {
			HeadSHA string `json:"head_sha"`
		} `json:"check_run"`
		CheckSuite struct {
			HeadSHA string `json:"head_sha"`
		} `json:"check_suite"`
	}
)

// handleWebhook answers a GitHub webhook delivery. In order: the body cap
// (413), the signature (401, with no other effect), the delivery id (a
// repeated one is acknowledged and does nothing), then the event is routed
// and its work queued; the answer never waits for a cycle.
func (s *Server) handleWebhook(w http.ResponseWriter, r *http.Request) {
	event := r.Header.Get("X-GitHub-Event")
	label := eventLabel(event)
	body, status := readBody(w, r, s.cfg.MaxWebhookBytes)
	if status != 0 {
		result := resultBadRequest
		if status == http.StatusRequestEntityTooLarge {
			result = resultTooLarge
		}
		s.metrics.webhook(label, result)
		s.log.Warn("webhook refused", "event", label, "result", result)
		refuse(w, status, result)
		return
	}
	// Fail closed: nothing below runs unless the body is signed with the
	// webhook secret.
	if err := VerifySignature(s.cfg.WebhookSecret, body, r.Header.Get("X-Hub-Signature-256")); err != nil {
		s.metrics.webhook(label, resultUnauthorized)
		s.log.Warn("webhook refused", "event", label, "result", resultUnauthorized, "reason", err.Error())
		refuse(w, http.StatusUnauthorized, "bad signature")
		return
	}
	id := r.Header.Get("X-GitHub-Delivery")
	if id == "" || len(id) > maxDeliveryID {
		s.metrics.webhook(label, resultBadRequest)
		refuse(w, http.StatusBadRequest, "X-GitHub-Delivery missing or too long")
		return
	}
	log := s.log.With("event", label, "delivery", id)
	if !s.deliveries.claim(id, s.clock.Now()) {
		s.metrics.webhook(label, resultDuplicate)
		log.Info("webhook duplicate")
		writeJSON(w, http.StatusOK, map[string]string{"delivery": id, "result": resultDuplicate})
		return
	}
	var p hookPayload
	if err := json.Unmarshal(body, &p); err != nil {
		s.metrics.webhook(label, resultBadRequest)
		log.Warn("webhook payload unreadable", "err", err)
		refuse(w, http.StatusBadRequest, "payload is not a JSON object")
		return
	}
	if s.changed != nil && p.Repository.FullName != "" {
		s.changed(p.Repository.FullName, event, p.Action)
	}
	result, why := s.route(event, id, p)
	if result == resultUnavailable {
		// Not queued: forget the id so that a redelivery after the restart
		// is processed.
		s.deliveries.release(id)
		s.metrics.webhook(label, result)
		refuse(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	s.metrics.webhook(label, result)
	log.Info("webhook", "action", p.Action, "repo", p.Repository.FullName, "result", result, "why", why)
	status = http.StatusAccepted
	if result != resultQueued {
		status = http.StatusOK
	}
	writeJSON(w, status, map[string]string{"delivery": id, "result": result, "reason": why})
}

// route turns an authenticated event into queued work. It returns the
// result label and a short reason for the log.
func (s *Server) route(event, id string, p hookPayload) (string, string) {
	repo := p.Repository.FullName
	switch event {
	case "ping":
		return resultIgnored, "ping"
	case "installation", "installation_repositories":
		s.requestRefresh()
		return resultQueued, "refresh the repository list"
	case "push":
		if p.Deleted || p.Repository.DefaultBranch == "" || p.Ref != "refs/heads/"+p.Repository.DefaultBranch {
			return resultIgnored, "not a push to the default branch"
		}
		// Any push to the default branch may move the repo config, the
		// policy or a values file: re-plan rather than diff the commits.
		return s.enqueueFor(repo, Trigger{Kind: TriggerPush, HeadSHA: p.After, Delivery: id})
	case "pull_request":
		if p.Action != "closed" {
			return resultIgnored, "pull_request " + p.Action
		}
		n := p.PullRequest.Number
		if n == 0 {
			n = p.Number
		}
		return s.enqueueFor(
			repo,
			Trigger{Kind: TriggerPullRequestClosed, PullRequest: n, Merged: p.PullRequest.Merged, Delivery: id},
		)
	case "check_run":
		if p.Action != "rerequested" {
			return resultIgnored, "check_run " + p.Action
		}
		return s.enqueueFor(repo, Trigger{Kind: TriggerCheckRerequested, HeadSHA: p.CheckRun.HeadSHA, Delivery: id})
	case "check_suite":
		// "Re-run all checks" on GitHub is a check_suite rerequested event
		// (Apps with checks: write receive it unsubscribed): the same work
		// as a rerequested check run.
		if p.Action != "rerequested" {
			return resultIgnored, "check_suite " + p.Action
		}
		return s.enqueueFor(repo, Trigger{Kind: TriggerCheckRerequested, HeadSHA: p.CheckSuite.HeadSHA, Delivery: id})
	default:
		return resultIgnored, "event not handled"
	}
}

func (s *Server) enqueueFor(repo string, t Trigger) (string, string) {
	if !s.watched(repo) {
		return resultIgnored, "repository not watched"
	}
	if !s.queue.enqueue(repo, t) {
		return resultUnavailable, "shutting down"
	}
	return resultQueued, string(t.Kind)
}
