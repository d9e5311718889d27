package reliability

import (
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/forge"
)

// forgedMarker is a marker a person writes into an intent: it claims the
// bot's branch, a proposal of the forger's choosing, and that the bot
// itself closed the pull request (so a person's close would be forgotten).
const forgedMarker = `<!-- backflow:marker {"v":1,"unit":"redis","environment":"prod-us-east","branch":"backflow/prod-us-east/redis","fingerprint":"sha256:forged","changes":[],"base":"","files":{},"policy":"","commits":[],"receipts":[],"closed":"superseded"} -->`

// Case 18: the bot's per-pull-request state cannot be forged or edited. An
// intent carrying a marker reaches the body only as text; a person's close
// of the pull request holds through later cycles of the same observation;
// a marker edited in the body (to say the bot closed it) is refused and
// reported, and the close still holds; no user text opens an HTML
// comment, a code block or a table row in the body.
func TestCase18ForgedMarker(t *testing.T) {
	files := gitopsFiles(t)
	reviewOnly(files)
	e := newHubEnv(t, files)
	a := e.adapter(nil)
	src := &staticSource{}
	obs := replicas(usEastNode, 4, e.clock.Now())
	obs.Change.Intent = "scale up " + forgedMarker + "\n```\n| x | y |\n<!-- unclosed"
	src.set(obs)
	b := e.newBot(a, src, forge.CommitGit)
	e.cycle(b)
	prs := e.pulls(a, e.repo)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1", len(prs))
	}
	first := prs[0]
	// Outside the receipts' YAML blocks (code, where nothing is markup),
	// the body holds one marker, one HTML comment (it), and no fence.
	text := outsideFences(first.Body)
	rawMarkers := strings.Count(text, "<!-- backflow:marker")
	openedComments := strings.Count(text, "<!--")
	fences := strings.Count(first.Body, "```")
	if rawMarkers != 1 || openedComments != 1 || fences != 2*strings.Count(first.Body, "<details>") {
		t.Errorf("the body carries %d markers, %d HTML comments and %d fences: user text escaped its place", rawMarkers, openedComments, fences)
	}

	// A person closes it; the same observation, cycle after cycle, is not
	// proposed again.
	carol := e.person("carol")
	if _, _, err := carol.PullRequests.Edit(e.ctx, owner, repoName, first.Number, &gh.PullRequest{State: gh.String("closed")}); err != nil {
		t.Fatal(err)
	}
	reopened, refused := 0, 0
	cycles := count(2, 6)
	for i := range cycles {
		e.clock.Advance(time.Minute)
		if i == cycles/2 {
			// Write access lets a person edit the marker too.
			pr, _, err := carol.PullRequests.Get(e.ctx, owner, repoName, first.Number)
			if err != nil {
				t.Fatal(err)
			}
			body := pr.GetBody()
			at := strings.LastIndex(body, "<!-- backflow:marker")
			edited := body[:at] + strings.Replace(body[at:], `"receipts":`, `"closed":"superseded","receipts":`, 1)
			if edited == pr.GetBody() {
				t.Fatal("the marker was not edited")
			}
			if _, _, err := carol.PullRequests.Edit(e.ctx, owner, repoName, first.Number, &gh.PullRequest{Body: gh.String(edited)}); err != nil {
				t.Fatal(err)
			}

		}
		for _, rr := range e.cycle(b).Repos {
			for _, msg := range rr.Errors {
				if strings.Contains(msg.Error(), "not authentic") {
					refused++
				}
			}
		}
	}
	prs = e.pulls(a, e.repo)
	reopened = len(prs) - 1
	if reopened != 0 {
		t.Errorf("a person's close was forgotten: %d pull requests opened after it", reopened)
	}
	if refused == 0 {
		t.Error("the edited marker was not reported")
	}
	report(t, "18", "forged-marker", "proposed_again_after_close", reopened, "raw_markers_in_body", rawMarkers,
		"html_comments_in_body", openedComments, "edited_markers_refused", refused)
}

// outsideFences is body without the content of its fenced code blocks.
func outsideFences(body string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.SplitAfter(body, "\n") {
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(line)
		}
	}
	return b.String()
}
