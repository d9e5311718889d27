package github

import (
	"context"
	"sort"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/forge"
)

func (a *Adapter) toIssue(ctx context.Context, is *gh.Issue) forge.Issue {
	login := is.GetUser().GetLogin()
	out := forge.Issue{
		Number: is.GetNumber(),
		URL:    is.GetHTMLURL(),
		Title:  is.GetTitle(),
		Body:   is.GetBody(),
		State:  forge.PRState(is.GetState()),
		Author: login,
		Mine:   login != "" && login == a.login(ctx),
	}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	sort.Strings(out.Labels)
	return out
}

// ListIssues implements forge.Forge, newest first, leaving out pull requests
// (which GitHub's issues endpoint includes).
func (a *Adapter) ListIssues(ctx context.Context, repo forge.Repo, label string,
	state forge.PRState) ([]forge.Issue, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return nil, err
	}
	return a.listIssues(ctx, in, repo, label, state)
}

func (a *Adapter) listIssues(ctx context.Context, in *installation, repo forge.Repo, label string,
	state forge.PRState) ([]forge.Issue, error) {
	if state == "" {
		state = forge.StateOpen
	}
	opts := &gh.IssueListByRepoOptions{
		State:       string(state),
		Sort:        "created",
		Direction:   "desc",
		ListOptions: gh.ListOptions{PerPage: perPage},
	}
	if label != "" {
		opts.Labels = []string{label}
	}
	var out []forge.Issue
	for page := 1; page != 0; {
		opts.Page = page
		list, resp, err := in.api.ListIssues(ctx, repo.Owner, repo.Name, opts)
		if err != nil {
			return nil, mapErr(err, "listing issues of %s", repo)
		}
		for _, is := range list {
			if !is.IsPullRequest() {
				out = append(out, a.toIssue(ctx, is))
			}
		}
		page = resp.NextPage
	}
	return out, nil
}

// CreateIssue implements forge.Forge. After a lost response it looks for its
// own open issue with that title before trying again.
func (a *Adapter) CreateIssue(ctx context.Context, repo forge.Repo, ni forge.NewIssue) (forge.Issue, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return forge.Issue{}, err
	}
	// GitHub's REST description has labels as an array: none is [], not null.
	labels := append([]string{}, ni.Labels...)
	var out forge.Issue
	err = a.create(ctx, func(ctx context.Context) error {
		is, _, err := in.api.CreateIssue(
			ctx,
			repo.Owner,
			repo.Name,
			&gh.IssueRequest{Title: &ni.Title, Body: &ni.Body, Labels: &labels},
		)
		if err != nil {
			return mapErr(err, "opening issue %q in %s", ni.Title, repo)
		}
		out = a.toIssue(ctx, is)
		return nil
	}, func(ctx context.Context) (bool, error) {
		label := ""
		if len(labels) > 0 {
			label = labels[0]
		}
		list, err := a.listIssues(ctx, in, repo, label, forge.StateOpen)
		for _, is := range list {
			if is.Mine && is.Title == ni.Title {
				out = is
				return true, nil
			}
		}
		return false, err
	})
	return out, err
}

// UpdateIssue implements forge.Forge.
func (a *Adapter) UpdateIssue(ctx context.Context, repo forge.Repo, number int,
	upd forge.IssueUpdate) (forge.Issue, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return forge.Issue{}, err
	}
	req := &gh.IssueRequest{Title: upd.Title, Body: upd.Body}
	if upd.State != nil {
		req.State = gh.String(string(*upd.State))
	}
	is, _, err := in.api.EditIssue(idempotent(ctx), repo.Owner, repo.Name, number, req)
	if err != nil {
		return forge.Issue{}, mapErr(err, "updating issue %s#%d", repo, number)
	}
	return a.toIssue(ctx, is), nil
}
