package github

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/forge"
)

func (a *Adapter) toPull(ctx context.Context, p *gh.PullRequest) forge.PullRequest {
	pr := forge.PullRequest{
		Number:         p.GetNumber(),
		NodeID:         p.GetNodeID(),
		URL:            p.GetHTMLURL(),
		Title:          p.GetTitle(),
		Body:           p.GetBody(),
		State:          forge.PRState(p.GetState()),
		Merged:         p.GetMerged() || p.MergedAt != nil,
		MergeCommitSHA: p.GetMergeCommitSHA(),
		HeadRef: p.GetHead().
			GetRef(),
		HeadSHA:          p.GetHead().GetSHA(),
		BaseRef:          p.GetBase().GetRef(),
		BaseSHA:          p.GetBase().GetSHA(),
		Draft:            p.GetDraft(),
		Mergeable:        p.Mergeable,
		MergeableState:   p.GetMergeableState(),
		AutoMergeEnabled: p.AutoMerge != nil,
		Author: p.GetUser().
			GetLogin(),
		CreatedAt: p.GetCreatedAt().Time,
		ClosedAt:  p.GetClosedAt().Time,
		MergedAt:  p.GetMergedAt().Time,
	}
	if !pr.Merged {
		pr.MergeCommitSHA = "" // GitHub fills it with a test merge for open pull requests
	}
	if pr.MergeableState == "unknown" {
		pr.MergeableState = ""
	}
	pr.Mine = pr.Author != "" && pr.Author == a.login(ctx)
	for _, l := range p.Labels {
		pr.Labels = append(pr.Labels, l.GetName())
	}
	sort.Strings(pr.Labels)
	for _, u := range p.RequestedReviewers {
		pr.RequestedReviewers = append(pr.RequestedReviewers, u.GetLogin())
	}
	for _, t := range p.RequestedTeams {
		pr.RequestedTeams = append(pr.RequestedTeams, t.GetSlug())
	}
	return pr
}

// GetPullRequest implements forge.Forge.
func (a *Adapter) GetPullRequest(ctx context.Context, repo forge.Repo, number int) (forge.PullRequest, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return forge.PullRequest{}, err
	}
	p, _, err := in.api.GetPull(ctx, repo.Owner, repo.Name, number)
	if err != nil {
		return forge.PullRequest{}, mapErr(err, "reading pull request %s#%d", repo, number)
	}
	return a.toPull(ctx, p), nil
}

// ListPullRequests implements forge.Forge, newest first. The head filter
// is sent as "owner:branch" and checked again here: GitHub ignores a head
// filter it cannot parse rather than refusing it.
func (a *Adapter) ListPullRequests(ctx context.Context, repo forge.Repo,
	f forge.PullRequestFilter) ([]forge.PullRequest, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return nil, err
	}
	return a.listPulls(ctx, in, repo, f)
}

func (a *Adapter) listPulls(ctx context.Context, in *installation, repo forge.Repo,
	f forge.PullRequestFilter) ([]forge.PullRequest, error) {
	state := string(f.State)
	if state == "" {
		state = string(forge.StateOpen)
	}
	opts := &gh.PullRequestListOptions{
		State:       state,
		Base:        f.Base,
		Sort:        "created",
		Direction:   "desc",
		ListOptions: gh.ListOptions{PerPage: perPage},
	}
	if f.Head != "" {
		opts.Head = repo.Owner + ":" + f.Head
	}
	var out []forge.PullRequest
	for page := 1; page != 0; {
		opts.Page = page
		list, resp, err := in.api.ListPulls(ctx, repo.Owner, repo.Name, opts)
		if err != nil {
			return nil, mapErr(err, "listing pull requests of %s", repo)
		}
		for _, p := range list {
			if f.Head != "" && p.GetHead().GetRef() != f.Head {
				continue
			}
			out = append(out, a.toPull(ctx, p))
		}
		page = resp.NextPage
	}
	return out, nil
}

// FindOpenPullRequest implements forge.Forge.
func (a *Adapter) FindOpenPullRequest(ctx context.Context, repo forge.Repo, head string) (forge.PullRequest, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return forge.PullRequest{}, err
	}
	return a.findOpen(ctx, in, repo, head)
}

func (a *Adapter) findOpen(ctx context.Context, in *installation, repo forge.Repo,
	head string) (forge.PullRequest, error) {
	list, err := a.listPulls(ctx, in, repo, forge.PullRequestFilter{Head: head, State: forge.StateOpen})
	if err != nil {
		return forge.PullRequest{}, err
	}
	if len(list) == 0 {
		return forge.PullRequest{}, fmt.Errorf(
			"error finding the open pull request from %s in %s: %w",
			head,
			repo,
			forge.ErrNotFound,
		)
	}
	return list[0], nil
}

// CreatePullRequest implements forge.Forge. After a lost response it looks
// for the pull request by head before trying again.
func (a *Adapter) CreatePullRequest(ctx context.Context, repo forge.Repo,
	np forge.NewPullRequest) (forge.PullRequest, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return forge.PullRequest{}, err
	}
	var out forge.PullRequest
	err = a.create(ctx, func(ctx context.Context) error {
		p, _, err := in.api.CreatePull(
			ctx,
			repo.Owner,
			repo.Name,
			&gh.NewPullRequest{Title: &np.Title, Head: &np.Head, Base: &np.Base, Body: &np.Body, Draft: &np.Draft},
		)
		if err != nil {
			return mapErr(err, "opening a pull request from %s in %s", np.Head, repo)
		}
		out = a.toPull(ctx, p)
		return nil
	}, func(ctx context.Context) (bool, error) {
		pr, err := a.findOpen(ctx, in, repo, np.Head)
		if err != nil || pr.BaseRef != np.Base || pr.Title != np.Title || !pr.Mine {
			return false, err
		}
		out = pr
		return true, nil
	})
	return out, err
}

// UpdatePullRequest implements forge.Forge.
func (a *Adapter) UpdatePullRequest(ctx context.Context, repo forge.Repo, number int,
	upd forge.PullRequestUpdate) (forge.PullRequest, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return forge.PullRequest{}, err
	}
	p, _, err := in.api.EditPull(
		idempotent(ctx),
		repo.Owner,
		repo.Name,
		number,
		&gh.PullRequest{Title: upd.Title, Body: upd.Body},
	)
	if err != nil {
		return forge.PullRequest{}, mapErr(err, "updating pull request %s#%d", repo, number)
	}
	return a.toPull(ctx, p), nil
}

// ClosePullRequest implements forge.Forge.
func (a *Adapter) ClosePullRequest(ctx context.Context, repo forge.Repo, number int) error {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return err
	}
	_, _, err = in.api.EditPull(
		idempotent(ctx),
		repo.Owner,
		repo.Name,
		number,
		&gh.PullRequest{State: gh.String("closed")},
	)
	return mapErr(err, "closing pull request %s#%d", repo, number)
}

func (a *Adapter) toComment(ctx context.Context, c *gh.IssueComment) forge.Comment {
	login := c.GetUser().GetLogin()
	return forge.Comment{
		ID:        c.GetID(),
		Body:      c.GetBody(),
		Author:    login,
		Mine:      login != "" && login == a.login(ctx),
		URL:       c.GetHTMLURL(),
		CreatedAt: c.GetCreatedAt().Time,
		UpdatedAt: c.GetUpdatedAt().Time,
	}
}

// ListComments implements forge.Forge.
func (a *Adapter) ListComments(ctx context.Context, repo forge.Repo, number int) ([]forge.Comment, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return nil, err
	}
	return a.listComments(ctx, in, repo, number)
}

func (a *Adapter) listComments(ctx context.Context, in *installation, repo forge.Repo,
	number int) ([]forge.Comment, error) {
	var out []forge.Comment
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: perPage}}
	for page := 1; page != 0; {
		opts.Page = page
		list, resp, err := in.api.ListComments(ctx, repo.Owner, repo.Name, number, opts)
		if err != nil {
			return nil, mapErr(err, "listing comments of %s#%d", repo, number)
		}
		for _, c := range list {
			out = append(out, a.toComment(ctx, c))
		}
		page = resp.NextPage
	}
	return out, nil
}

// CreateComment implements forge.Forge. After a lost response it looks for
// its own comment with the same body before trying again.
func (a *Adapter) CreateComment(ctx context.Context, repo forge.Repo, number int, body string) (forge.Comment, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return forge.Comment{}, err
	}
	var out forge.Comment
	err = a.create(ctx, func(ctx context.Context) error {
		c, _, err := in.api.CreateComment(ctx, repo.Owner, repo.Name, number, &gh.IssueComment{Body: &body})
		if err != nil {
			return mapErr(err, "commenting on %s#%d", repo, number)
		}
		out = a.toComment(ctx, c)
		return nil
	}, func(ctx context.Context) (bool, error) {
		list, err := a.listComments(ctx, in, repo, number)
		for i := len(list) - 1; i >= 0; i-- {
			if list[i].Mine && list[i].Body == body {
				out = list[i]
				return true, nil
			}
		}
		return false, err
	})
	return out, err
}

// UpdateComment implements forge.Forge.
func (a *Adapter) UpdateComment(ctx context.Context, repo forge.Repo, id int64, body string) (forge.Comment, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return forge.Comment{}, err
	}
	c, _, err := in.api.EditComment(idempotent(ctx), repo.Owner, repo.Name, id, &gh.IssueComment{Body: &body})
	if err != nil {
		return forge.Comment{}, mapErr(err, "editing comment %d in %s", id, repo)
	}
	return a.toComment(ctx, c), nil
}

// AddLabels implements forge.Forge; adding a label twice changes nothing, so
// it is retried like a read.
func (a *Adapter) AddLabels(ctx context.Context, repo forge.Repo, number int, labels ...string) error {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return err
	}
	_, _, err = in.api.AddLabels(idempotent(ctx), repo.Owner, repo.Name, number, labels)
	return mapErr(err, "labelling %s#%d with %s", repo, number, strings.Join(labels, ", "))
}

// RemoveLabel implements forge.Forge.
func (a *Adapter) RemoveLabel(ctx context.Context, repo forge.Repo, number int, label string) error {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return err
	}
	_, err = in.api.RemoveLabel(idempotent(ctx), repo.Owner, repo.Name, number, label)
	err = mapErr(err, "removing label %s from %s#%d", label, repo, number)
	if errors.Is(err, forge.ErrNotFound) {
		// GitHub answers 404 both for a missing label and a missing issue;
		// tell them apart so that only the first is success.
		one := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 1}}
		if _, _, ierr := in.api.ListComments(ctx, repo.Owner, repo.Name, number, one); ierr == nil {
			return nil
		}
	}
	return err
}

// RequestReviewers implements forge.Forge.
func (a *Adapter) RequestReviewers(ctx context.Context, repo forge.Repo, number int, users, teams []string) error {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return err
	}
	_, _, err = in.api.RequestReviewers(
		idempotent(ctx),
		repo.Owner,
		repo.Name,
		number,
		gh.ReviewersRequest{Reviewers: users, TeamReviewers: teams},
	)
	return mapErr(err, "requesting reviewers on %s#%d", repo, number)
}

// Merge implements forge.Forge: a REST merge pinned to headSHA (409 when the
// head moved, 405 when not mergeable). After a lost response it reads the
// pull request to see whether the merge happened.
func (a *Adapter) Merge(ctx context.Context, repo forge.Repo, number int, headSHA string,
	method forge.MergeMethod) (string, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return "", err
	}
	if method == "" {
		method = forge.MergeCommit
	}
	var sha string
	err = a.create(ctx, func(ctx context.Context) error {
		res, _, err := in.api.MergePull(
			ctx,
			repo.Owner,
			repo.Name,
			number,
			"",
			&gh.PullRequestOptions{SHA: headSHA, MergeMethod: string(method)},
		)
		if err != nil {
			return mapErr(err, "merging %s#%d at %s", repo, number, short(headSHA))
		}
		sha = res.GetSHA()
		return nil
	}, func(ctx context.Context) (bool, error) {
		p, _, err := in.api.GetPull(ctx, repo.Owner, repo.Name, number)
		if err != nil || !p.GetMerged() || p.GetHead().GetSHA() != headSHA {
			return false, err
		}
		sha = p.GetMergeCommitSHA()
		return true, nil
	})
	return sha, err
}

const enableAutoMergeMutation = `mutation($input: EnablePullRequestAutoMergeInput!) {
  enablePullRequestAutoMerge(input: $input) { pullRequest { number autoMergeRequest { enabledAt } } }
}`

const disableAutoMergeMutation = `mutation($input: DisablePullRequestAutoMergeInput!) {
  disablePullRequestAutoMerge(input: $input) { pullRequest { number autoMergeRequest { enabledAt } } }
}`

type gqlResponse struct {
	Data   map[string]any `json:"data"`
	Errors []struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"errors"`
}

var (
	alreadyMergeableText = regexp.MustCompile(`(?i)(clean|unstable|has_hooks) status|already (mergeable|merged)`)
	notMergeableText     = regexp.MustCompile(`(?i)dirty status|conflict|closed`)
	autoMergeOffText     = regexp.MustCompile(`(?i)auto.?merge is not allowed|not enabled for this repository`)
	headMovedText        = regexp.MustCompile(`(?i)head ref has moved|expected head|head branch was modified`)
)

// EnableAutoMerge implements forge.Forge with GraphQL's
// enablePullRequestAutoMerge, which GitHub offers only there. Its errors come
// with HTTP 200 in "errors" and are mapped by message.
func (a *Adapter) EnableAutoMerge(ctx context.Context, repo forge.Repo, pr forge.PullRequest, expectedHead string,
	method forge.MergeMethod) error {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return err
	}
	where := fmt.Sprintf("enabling auto-merge on %s#%d", repo, pr.Number)
	if pr.NodeID, err = in.nodeID(ctx, repo, pr, where); err != nil {
		return err
	}
	if method == "" {
		method = forge.MergeCommit
	}
	input := map[string]any{"pullRequestId": pr.NodeID, "mergeMethod": strings.ToUpper(string(method))}
	if expectedHead != "" {
		input["expectedHeadOid"] = expectedHead
	}
	body := map[string]any{"query": enableAutoMergeMutation, "variables": map[string]any{"input": input}}
	return a.create(ctx, func(ctx context.Context) error {
		return in.mutate(ctx, a.cfg.GraphQLURL, body, where, func(msg, typ string) error {
			switch {
			case headMovedText.MatchString(msg):
				return forge.ErrConflict
			case alreadyMergeableText.MatchString(msg):
				return forge.ErrAlreadyMergeable
			case autoMergeOffText.MatchString(msg):
				return forge.ErrAutoMergeNotAllowed
			case typ == "NOT_FOUND":
				return forge.ErrNotFound
			case typ == "FORBIDDEN":
				return forge.ErrUnauthorized
			case notMergeableText.MatchString(msg):
				return forge.ErrNotMergeable
			}
			return forge.ErrInvalid
		})
	}, func(ctx context.Context) (bool, error) {
		p, _, err := in.api.GetPull(ctx, repo.Owner, repo.Name, pr.Number)
		return err == nil && p.AutoMerge != nil, err
	})
}

// mutate sends a GraphQL mutation. A transport or HTTP error is mapped as
// every REST error is; GraphQL's first error becomes an error naming where
// and quoting its message, wrapping the sentinel that classify gives for its
// message and type (each mutation knows its own messages).
func (in *installation) mutate(ctx context.Context, url string, body any, where string,
	classify func(msg, typ string) error) error {
	var out gqlResponse
	if _, err := in.api.GraphQL(ctx, url, body, &out); err != nil {
		return mapErr(err, "%s", where)
	}
	if len(out.Errors) == 0 {
		return nil
	}
	e := out.Errors[0]
	return fmt.Errorf("error %s: %s: %w", where, e.Message, classify(e.Message, e.Type))
}

// nodeID is the pull request's GraphQL node ID, read over REST when the
// caller's copy lacks it.
func (in *installation) nodeID(ctx context.Context, repo forge.Repo, pr forge.PullRequest,
	where string) (string, error) {
	if pr.NodeID != "" {
		return pr.NodeID, nil
	}
	p, _, err := in.api.GetPull(ctx, repo.Owner, repo.Name, pr.Number)
	if err != nil {
		return "", mapErr(err, "%s", where)
	}
	return p.GetNodeID(), nil
}

// DisableAutoMerge implements forge.Forge with GraphQL's
// disablePullRequestAutoMerge. GitHub keeps auto-merge armed when someone
// with write access pushes to the head branch, so the bot disarms it
// itself before a head it has not checked can merge.
func (a *Adapter) DisableAutoMerge(ctx context.Context, repo forge.Repo, pr forge.PullRequest) error {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return err
	}
	where := fmt.Sprintf("disabling auto-merge on %s#%d", repo, pr.Number)
	if pr.NodeID, err = in.nodeID(ctx, repo, pr, where); err != nil {
		return err
	}
	body := map[string]any{
		"query":     disableAutoMergeMutation,
		"variables": map[string]any{"input": map[string]any{"pullRequestId": pr.NodeID}},
	}
	return a.create(ctx, func(ctx context.Context) error {
		return in.mutate(ctx, a.cfg.GraphQLURL, body, where, func(_, typ string) error {
			switch typ {
			case "NOT_FOUND":
				return forge.ErrNotFound
			case "FORBIDDEN":
				return forge.ErrUnauthorized
			}
			return forge.ErrInvalid
		})
	}, func(ctx context.Context) (bool, error) {
		p, _, err := in.api.GetPull(ctx, repo.Owner, repo.Name, pr.Number)
		return err == nil && p.AutoMerge == nil, err
	})
}
