package github

import (
	"context"
	"sort"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/forge"
)

func (a *Adapter) toCheckRun(ctx context.Context, c *gh.CheckRun) forge.CheckRun {
	return forge.CheckRun{
		ID:         c.GetID(),
		Name:       c.GetName(),
		HeadSHA:    c.GetHeadSHA(),
		Status:     c.GetStatus(),
		Conclusion: c.GetConclusion(),
		Title: c.GetOutput().
			GetTitle(),
		Summary:    c.GetOutput().GetSummary(),
		Text:       c.GetOutput().GetText(),
		DetailsURL: c.GetDetailsURL(),
		ExternalID: c.GetExternalID(),
		Mine:       c.GetApp().GetID() != 0 && c.GetApp().GetID() == a.cfg.AppID,
	}
}

func checkOutput(run forge.CheckRun) *gh.CheckRunOutput {
	if run.Title == "" && run.Summary == "" && run.Text == "" {
		return nil
	}
	o := &gh.CheckRunOutput{Title: gh.String(run.Title), Summary: gh.String(run.Summary)}
	if run.Text != "" {
		o.Text = gh.String(run.Text)
	}
	return o
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// status defaults to completed when a conclusion is given, as the port says.
func status(run forge.CheckRun) *string {
	if run.Status == "" && run.Conclusion != "" {
		return gh.String(forge.CheckCompleted)
	}
	return optional(run.Status)
}

// CreateCheckRun implements forge.Forge. After a lost response it looks for
// its own run of that name on the commit before trying again.
func (a *Adapter) CreateCheckRun(ctx context.Context, repo forge.Repo, run forge.CheckRun) (forge.CheckRun, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return forge.CheckRun{}, err
	}
	var out forge.CheckRun
	err = a.create(ctx, func(ctx context.Context) error {
		c, _, err := in.api.CreateCheckRun(
			ctx,
			repo.Owner,
			repo.Name,
			gh.CreateCheckRunOptions{Name: run.Name, HeadSHA: run.HeadSHA,
				Status: status(
					run,
				), Conclusion: optional(run.Conclusion), DetailsURL: optional(run.DetailsURL), ExternalID: optional(run.ExternalID),
				Output: checkOutput(run)},
		)
		if err != nil {
			return mapErr(err, "creating check run %s on %s in %s", run.Name, short(run.HeadSHA), repo)
		}
		out = a.toCheckRun(ctx, c)
		return nil
	}, func(ctx context.Context) (bool, error) {
		list, err := a.listChecks(ctx, in, repo, run.HeadSHA, run.Name)
		for _, c := range list {
			if c.Mine && c.Title == run.Title && c.Conclusion == run.Conclusion && c.ExternalID == run.ExternalID {
				out = c
				return true, nil
			}
		}
		return false, err
	})
	return out, err
}

// UpdateCheckRun implements forge.Forge.
func (a *Adapter) UpdateCheckRun(ctx context.Context, repo forge.Repo, id int64,
	run forge.CheckRun) (forge.CheckRun, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return forge.CheckRun{}, err
	}
	c, _, err := in.api.UpdateCheckRun(idempotent(ctx), repo.Owner, repo.Name, id, gh.UpdateCheckRunOptions{Name: run.Name,
		Status: status(
			run,
		), Conclusion: optional(run.Conclusion), DetailsURL: optional(run.DetailsURL), ExternalID: optional(run.ExternalID),
		Output: checkOutput(run)})
	if err != nil {
		return forge.CheckRun{}, mapErr(err, "updating check run %d in %s", id, repo)
	}
	return a.toCheckRun(ctx, c), nil
}

// ListCheckRuns implements forge.Forge, newest first.
func (a *Adapter) ListCheckRuns(ctx context.Context, repo forge.Repo, sha, name string) ([]forge.CheckRun, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return nil, err
	}
	return a.listChecks(ctx, in, repo, sha, name)
}

func (a *Adapter) listChecks(ctx context.Context, in *installation, repo forge.Repo,
	sha, name string) ([]forge.CheckRun, error) {
	opts := &gh.ListCheckRunsOptions{
		CheckName:   optional(name),
		Filter:      gh.String("all"),
		ListOptions: gh.ListOptions{PerPage: perPage},
	}
	var out []forge.CheckRun
	for page := 1; page != 0; {
		opts.Page = page
		res, resp, err := in.api.ListCheckRunsForRef(ctx, repo.Owner, repo.Name, sha, opts)
		if err != nil {
			return nil, mapErr(err, "listing check runs on %s in %s", short(sha), repo)
		}
		for _, c := range res.CheckRuns {
			out = append(out, a.toCheckRun(ctx, c))
		}
		page = resp.NextPage
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, nil
}
