package localhub

// registerRoutes lists every endpoint the hub serves. Order matters where
// a {ref...} wildcard could swallow a literal tail: specific routes first.
func (h *Hub) registerRoutes() {
	const repo = "/repos/{owner}/{repo}"
	add := func(method, template string, auth authKind, fn func(*call)) {
		h.routes = append(h.routes, newRoute(method, template, auth, fn))
	}
	// The App itself (JWT).
	add("GET", "/app", authJWT, h.getApp)
	add("GET", "/app/installations", authJWT, h.listAppInstallations)
	add("GET", "/app/installations/{id}", authJWT, h.getAppInstallation)
	add("POST", "/app/installations/{id}/access_tokens", authJWT, h.createAccessToken)
	add("GET", repo+"/installation", authJWT, h.getRepoInstallation)
	add("GET", "/orgs/{account}/installation", authJWT, h.getAccountInstallation)
	add("GET", "/users/{account}/installation", authJWT, h.getAccountInstallation)

	// Everything else takes an installation token.
	add("GET", "/installation/repositories", authToken, h.listInstallationRepos)
	add("GET", "/rate_limit", authToken, h.getRateLimit)
	add("POST", "/graphql", authToken, h.graphql)
	add("GET", repo, authToken, h.getRepo)
	add("GET", repo+"/events", authToken, h.listRepoEvents)
	add("GET", repo+"/contents", authToken, h.getContents)
	add("GET", repo+"/contents/{path...}", authToken, h.getContents)
	add("PUT", repo+"/contents/{path...}", authToken, h.putContents)
	add("DELETE", repo+"/contents/{path...}", authToken, h.putContents)
	add("GET", "/raw/{owner}/{repo}/{sha}/{path...}", authToken, h.getRaw)
	add("GET", repo+"/branches", authToken, h.listBranches)
	add("GET", repo+"/branches/{branch}", authToken, h.getBranch)
	add("GET", repo+"/branches/{branch}/protection", authToken, h.getProtection)

	add("GET", repo+"/commits", authToken, h.listCommits)
	add("GET", repo+"/commits/{ref...}/pulls", authToken, h.listPullsForCommit)
	add("GET", repo+"/commits/{ref...}/check-runs", authToken, h.listCheckRunsForRef)
	add("GET", repo+"/commits/{ref...}/statuses", authToken, h.listStatuses)
	add("GET", repo+"/commits/{ref...}/status", authToken, h.combinedStatus)
	add("GET", repo+"/commits/{ref...}", authToken, h.getCommit)
	add("GET", repo+"/compare/{basehead...}", authToken, h.compare)

	add("GET", repo+"/git/ref/{ref...}", authToken, h.getRef)
	add("GET", repo+"/git/matching-refs/{ref...}", authToken, h.listMatchingRefs)
	add("GET", repo+"/git/refs", authToken, h.listMatchingRefs)
	add("GET", repo+"/git/refs/{ref...}", authToken, h.listMatchingRefs)
	add("POST", repo+"/git/refs", authToken, h.createRef)
	add("PATCH", repo+"/git/refs/{ref...}", authToken, h.updateRef)
	add("DELETE", repo+"/git/refs/{ref...}", authToken, h.deleteRef)
	add("POST", repo+"/git/blobs", authToken, h.createBlob)
	add("GET", repo+"/git/blobs/{sha}", authToken, h.getBlob)
	add("POST", repo+"/git/trees", authToken, h.createTree)
	add("GET", repo+"/git/trees/{sha}", authToken, h.getTree)
	add("POST", repo+"/git/commits", authToken, h.createGitCommit)
	add("GET", repo+"/git/commits/{sha}", authToken, h.getGitCommit)

	add("GET", repo+"/pulls", authToken, h.listPulls)
	add("POST", repo+"/pulls", authToken, h.createPull)
	add("GET", repo+"/pulls/{number}", authToken, h.getPull)
	add("PATCH", repo+"/pulls/{number}", authToken, h.updatePull)
	add("PUT", repo+"/pulls/{number}/merge", authToken, h.mergePull)
	add("GET", repo+"/pulls/{number}/commits", authToken, h.listPullCommits)
	add("GET", repo+"/pulls/{number}/files", authToken, h.listPullFiles)
	add("GET", repo+"/pulls/{number}/requested_reviewers", authToken, h.listReviewers)
	add("POST", repo+"/pulls/{number}/requested_reviewers", authToken, h.requestReviewers)
	add("DELETE", repo+"/pulls/{number}/requested_reviewers", authToken, h.removeReviewers)

	add("GET", repo+"/issues", authToken, h.listIssues)
	add("POST", repo+"/issues", authToken, h.createIssue)
	add("GET", repo+"/issues/comments/{id}", authToken, h.getComment)
	add("PATCH", repo+"/issues/comments/{id}", authToken, h.updateComment)
	add("DELETE", repo+"/issues/comments/{id}", authToken, h.deleteComment)
	add("GET", repo+"/issues/{number}", authToken, h.getIssue)
	add("PATCH", repo+"/issues/{number}", authToken, h.updateIssue)
	add("GET", repo+"/issues/{number}/labels", authToken, h.listIssueLabels)
	add("POST", repo+"/issues/{number}/labels", authToken, h.addIssueLabels)
	add("PUT", repo+"/issues/{number}/labels", authToken, h.replaceIssueLabels)
	add("DELETE", repo+"/issues/{number}/labels/{name}", authToken, h.removeIssueLabel)
	add("GET", repo+"/issues/{number}/comments", authToken, h.listComments)
	add("POST", repo+"/issues/{number}/comments", authToken, h.createComment)
	add("GET", repo+"/labels", authToken, h.listRepoLabels)
	add("POST", repo+"/labels", authToken, h.createRepoLabel)
	add("GET", repo+"/labels/{name}", authToken, h.getRepoLabel)

	add("POST", repo+"/check-runs", authToken, h.createCheckRun)
	add("GET", repo+"/check-runs/{id}", authToken, h.getCheckRun)
	add("PATCH", repo+"/check-runs/{id}", authToken, h.updateCheckRun)
	add("POST", repo+"/statuses/{sha}", authToken, h.createStatus)
}

// getRateLimit serves GET /rate_limit, which GitHub does not count.
func (h *Hub) getRateLimit(c *call) {
	c.limited = true // not counted, as on GitHub
	res := obj{}
	for _, r := range []string{"core", "graphql"} {
		w := h.rateWindow(c, r)
		res[r] = obj{"limit": w.limit, "remaining": w.remaining(), "reset": w.reset.Unix(), "used": w.used, "resource": r}
	}
	c.json(200, obj{"resources": res, "rate": res["core"]})
}
