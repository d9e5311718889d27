// Package forgetest provides Fake, an in-memory forge.Forge that records the
// effects of every write as short strings ("acme/gitops#12:label:env:prod"),
// so the reconcile cycle's unit tests can assert on what it did.
//
// The fake follows the local hub's (and GitHub's) rules on the same calls:
// compare-and-swap refs, one open pull request per head and base, SHA-pinned
// merges, auto-merge refused on a pull request that could merge now, and a
// branch push updating the open pull requests from it. It knows nothing of
// HTTP; end-to-end tests use the local hub instead.
package forgetest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
)

// Fake is an in-memory forge. The zero value is not usable; call New.
type Fake struct {
	mu      sync.Mutex
	app     forge.App
	now     func() time.Time
	nextID  int64
	seq     int
	repos   map[string]*repo
	order   []string
	effects []string
	fails   map[string][]error
	reads   int
	writes  int
}

var _ forge.Forge = (*Fake)(nil)

type commit struct {
	sha       string
	parents   []string
	files     map[string][]byte
	message   string
	author    forge.Author
	committer forge.Author
	verified  bool
}

type pull struct {
	pr         forge.PullRequest
	autoMethod forge.MergeMethod
}

type comment struct {
	number int
	c      forge.Comment
}

type repo struct {
	info           forge.Repo
	commits        map[string]*commit
	branches       map[string]string
	pulls          []*pull
	issues         []*forge.Issue
	comments       []*comment
	checks         []*forge.CheckRun
	nextNumber     int
	allowAutoMerge bool
	required       map[string][]string
}

// New returns an empty fake acting as app (Login defaults to Slug+"[bot]").
// now supplies timestamps; nil means a fixed instant, so output is stable.
func New(app forge.App, now func() time.Time) *Fake {
	if app.Login == "" {
		app.Login = app.Slug + "[bot]"
	}
	if now == nil {
		fixed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		now = func() time.Time { return fixed }
	}
	return &Fake{app: app, now: now, repos: map[string]*repo{}, fails: map[string][]error{}, nextID: 1000}
}

// AddRepo creates owner/name whose default branch "main" holds one commit
// with files, auto-merge allowed. It returns the repository.
func (f *Fake) AddRepo(full string, files map[string]string) forge.Repo {
	f.mu.Lock()
	defer f.mu.Unlock()
	owner, name, _ := strings.Cut(full, "/")
	r := &repo{info: forge.Repo{Owner: owner, Name: name, DefaultBranch: "main"}, commits: map[string]*commit{},
		branches: map[string]string{}, nextNumber: 1, allowAutoMerge: true, required: map[string][]string{}}
	fs := map[string][]byte{}
	for p, c := range files {
		fs[p] = []byte(c)
	}
	c := f.newCommit(r, nil, fs, "Initial commit\n", forge.Author{Name: owner, Email: owner + "@users.noreply.localhost"}, false)
	r.branches["main"] = c.sha
	f.repos[full] = r
	f.order = append(f.order, full)
	return r.info
}

// SetRequiredChecks makes checks required on branch's pull requests.
func (f *Fake) SetRequiredChecks(full, branch string, checks ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.repos[full].required[branch] = checks
}

// SetAllowAutoMerge switches the repository's auto-merge setting.
func (f *Fake) SetAllowAutoMerge(full string, allow bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.repos[full].allowAutoMerge = allow
}

// Push commits files on top of branch (creating it from the default branch
// when missing) as a person would, without recording an effect, and returns
// the new head.
func (f *Fake) Push(full, branch string, author forge.Author, message string, files map[string]string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.repos[full]
	parent, ok := r.branches[branch]
	if !ok {
		parent = r.branches[r.info.DefaultBranch]
	}
	fs := map[string][]byte{}
	for p, c := range r.commits[parent].files {
		fs[p] = c
	}
	for p, c := range files {
		fs[p] = []byte(c)
	}
	c := f.newCommit(r, []string{parent}, fs, message, author, false)
	f.moveBranch(r, branch, c.sha)
	return c.sha
}

// CommentAs adds a comment by another account, without recording an effect.
func (f *Fake) CommentAs(full string, number int, login, body string) forge.Comment {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.repos[full]
	f.nextID++
	c := forge.Comment{ID: f.nextID, Body: body, Author: login, Mine: login == f.app.Login, CreatedAt: f.now(), UpdatedAt: f.now(),
		URL: fmt.Sprintf("https://forge.test/%s/issues/%d#issuecomment-%d", full, number, f.nextID)}
	r.comments = append(r.comments, &comment{number: number, c: c})
	return c
}

// Fail makes the next call of op (a forge.Forge method name such as
// "CreatePullRequest") return err instead of acting. Queued errors are
// used in order.
func (f *Fake) Fail(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails[op] = append(f.fails[op], err)
}

// Effects returns the writes recorded so far, in order.
func (f *Fake) Effects() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.effects)
}

// ResetEffects forgets recorded effects and request counts (after setting up).
func (f *Fake) ResetEffects() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.effects, f.reads, f.writes = nil, 0, 0
}

// Counts returns how many read and write calls were made.
func (f *Fake) Counts() (reads, writes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads, f.writes
}

// File returns a file's content at a branch or SHA, for assertions.
func (f *Fake) File(full, ref, path string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.repos[full]
	if sha, ok := r.branches[ref]; ok {
		ref = sha
	}
	c, ok := r.commits[ref]
	if !ok {
		return "", false
	}
	b, ok := c.files[path]
	return string(b), ok
}

// Branches returns the repository's branches and heads.
func (f *Fake) Branches(full string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for b, s := range f.repos[full].branches {
		out[b] = s
	}
	return out
}

// --- internals; callers hold f.mu ---

func (f *Fake) begin(op string, write bool) error {
	if write {
		f.writes++
	} else {
		f.reads++
	}
	if q := f.fails[op]; len(q) > 0 {
		f.fails[op] = q[1:]
		return q[0]
	}
	return nil
}

// beginIn counts a call on one repository, as begin does, and finds that
// repository: most calls open with both.
func (f *Fake) beginIn(op string, write bool, rp forge.Repo) (*repo, error) {
	if err := f.begin(op, write); err != nil {
		return nil, err
	}
	return f.repo(rp)
}

func (f *Fake) record(format string, args ...any) {
	f.effects = append(f.effects, fmt.Sprintf(format, args...))
}

func (f *Fake) repo(r forge.Repo) (*repo, error) {
	rs, ok := f.repos[r.FullName()]
	if !ok {
		return nil, fmt.Errorf("repository %s: %w", r, forge.ErrNotFound)
	}
	return rs, nil
}

func (f *Fake) newCommit(r *repo, parents []string, files map[string][]byte, msg string, author forge.Author, verified bool) *commit {
	f.seq++
	h := sha1.Sum([]byte(fmt.Sprintf("%d\x00%s\x00%s\x00%v", f.seq, r.info, msg, parents)))
	c := &commit{sha: hex.EncodeToString(h[:]), parents: parents, files: files, message: msg, author: author, committer: author, verified: verified}
	r.commits[c.sha] = c
	return c
}

// moveBranch sets (or with sha "" deletes) a branch and follows it in open
// pull requests, as GitHub does: a new head cancels auto-merge, a deleted
// head closes the pull request.
func (f *Fake) moveBranch(r *repo, branch, sha string) {
	if sha == "" {
		delete(r.branches, branch)
	} else {
		r.branches[branch] = sha
	}
	for _, p := range r.pulls {
		if p.pr.State != forge.StateOpen || p.pr.HeadRef != branch {
			continue
		}
		if sha == "" {
			p.pr.State, p.pr.ClosedAt = forge.StateClosed, f.now()
			p.autoMethod, p.pr.AutoMergeEnabled = "", false
			continue
		}
		if p.pr.HeadSHA != sha {
			p.pr.HeadSHA = sha
			p.autoMethod, p.pr.AutoMergeEnabled = "", false
		}
	}
	f.tryAutoMerge(r)
}

func (f *Fake) isAncestor(r *repo, anc, sha string) bool {
	seen := map[string]bool{}
	stack := []string{sha}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s == anc {
			return true
		}
		if seen[s] {
			continue
		}
		seen[s] = true
		if c := r.commits[s]; c != nil {
			stack = append(stack, c.parents...)
		}
	}
	return false
}

func (f *Fake) ancestors(r *repo, sha string) map[string]bool {
	seen := map[string]bool{}
	stack := []string{sha}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		if c := r.commits[s]; c != nil {
			stack = append(stack, c.parents...)
		}
	}
	return seen
}

// mergeBase is the nearest common ancestor (breadth first from b).
func (f *Fake) mergeBase(r *repo, a, b string) string {
	inA := f.ancestors(r, a)
	queue := []string{b}
	seen := map[string]bool{}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if seen[s] {
			continue
		}
		seen[s] = true
		if inA[s] {
			return s
		}
		if c := r.commits[s]; c != nil {
			queue = append(queue, c.parents...)
		}
	}
	return ""
}

// mergeFiles is a file-level three-way merge; ok is false on a conflict.
func (f *Fake) mergeFiles(r *repo, base, head string) (map[string][]byte, bool) {
	mb := r.commits[f.mergeBase(r, base, head)]
	bc, hc := r.commits[base], r.commits[head]
	var orig map[string][]byte
	if mb != nil {
		orig = mb.files
	}
	out := map[string][]byte{}
	paths := map[string]bool{}
	for _, m := range []map[string][]byte{orig, bc.files, hc.files} {
		for p := range m {
			paths[p] = true
		}
	}
	for p := range paths {
		o, oOK := orig[p]
		b, bOK := bc.files[p]
		h, hOK := hc.files[p]
		same := func(x []byte, xOK bool, y []byte, yOK bool) bool { return xOK == yOK && string(x) == string(y) }
		switch {
		case same(b, bOK, h, hOK):
		case same(o, oOK, h, hOK):
		case same(o, oOK, b, bOK):
			b, bOK = h, hOK
		default:
			return nil, false
		}
		if bOK {
			out[p] = b
		}
	}
	return out, true
}

// mergeState mirrors the hub: dirty, draft, blocked (a required check not
// green), unstable (a completed check not green) or clean.
func (f *Fake) mergeState(r *repo, p *pull) (state string, missing string, failing bool) {
	base, ok := r.branches[p.pr.BaseRef]
	if !ok {
		return "dirty", "", false
	}
	if _, ok := f.mergeFiles(r, base, p.pr.HeadSHA); !ok {
		return "dirty", "", false
	}
	if p.pr.Draft {
		return "draft", "", false
	}
	for _, name := range r.required[p.pr.BaseRef] {
		var run *forge.CheckRun
		for _, cr := range r.checks {
			if cr.HeadSHA == p.pr.HeadSHA && cr.Name == name {
				run = cr
			}
		}
		switch {
		case run == nil || run.Status != forge.CheckCompleted:
			return "blocked", name, false
		case !green(run.Conclusion):
			return "blocked", name, true
		}
	}
	for _, cr := range r.checks {
		if cr.HeadSHA == p.pr.HeadSHA && cr.Status == forge.CheckCompleted && !green(cr.Conclusion) {
			return "unstable", "", false
		}
	}
	return "clean", "", false
}

func green(c string) bool {
	return c == forge.ConclusionSuccess || c == forge.ConclusionNeutral || c == forge.ConclusionSkipped
}

func (f *Fake) doMerge(r *repo, p *pull, method forge.MergeMethod, actor string) (string, error) {
	if p.pr.State != forge.StateOpen {
		return "", fmt.Errorf("pull request #%d is closed: %w", p.pr.Number, forge.ErrNotMergeable)
	}
	switch method {
	case forge.MergeCommit, forge.MergeSquash, forge.MergeRebase:
	default:
		return "", fmt.Errorf("merge method %q: %w", method, forge.ErrInvalid)
	}
	state, missing, failing := f.mergeState(r, p)
	switch {
	case state == "dirty":
		return "", fmt.Errorf("pull request #%d has conflicts: %w", p.pr.Number, forge.ErrNotMergeable)
	case state == "draft":
		return "", fmt.Errorf("pull request #%d is a draft: %w", p.pr.Number, forge.ErrNotMergeable)
	case missing != "" && failing:
		return "", fmt.Errorf("required check %q is failing: %w", missing, forge.ErrNotMergeable)
	case missing != "":
		return "", fmt.Errorf("required check %q is expected: %w", missing, forge.ErrNotMergeable)
	}
	base := r.branches[p.pr.BaseRef]
	files, _ := f.mergeFiles(r, base, p.pr.HeadSHA)
	parents := []string{base}
	if method == forge.MergeCommit {
		parents = append(parents, p.pr.HeadSHA)
	}
	who := forge.Author{Name: actor, Email: actor + "@users.noreply.github.com"}
	c := f.newCommit(r, parents, files, fmt.Sprintf("%s (#%d)\n", p.pr.Title, p.pr.Number), who, true)
	now := f.now()
	p.pr.Merged, p.pr.MergedAt, p.pr.MergeCommitSHA, p.pr.BaseSHA = true, now, c.sha, base
	p.pr.State, p.pr.ClosedAt = forge.StateClosed, now
	p.autoMethod, p.pr.AutoMergeEnabled = "", false
	f.moveBranch(r, p.pr.BaseRef, c.sha)
	return c.sha, nil
}

// tryAutoMerge merges armed pull requests whose checks are green.
func (f *Fake) tryAutoMerge(r *repo) {
	for _, p := range r.pulls {
		if p.pr.State != forge.StateOpen || p.autoMethod == "" {
			continue
		}
		if st, _, _ := f.mergeState(r, p); st != "clean" && st != "unstable" {
			continue
		}
		if _, err := f.doMerge(r, p, p.autoMethod, f.app.Login); err == nil {
			f.record("%s#%d:merged:auto", r.info, p.pr.Number)
		}
	}
}

func (f *Fake) findPull(r *repo, number int) (*pull, error) {
	for _, p := range r.pulls {
		if p.pr.Number == number {
			return p, nil
		}
	}
	return nil, fmt.Errorf("pull request %s#%d: %w", r.info, number, forge.ErrNotFound)
}

func (f *Fake) findIssue(r *repo, number int) (*forge.Issue, error) {
	for _, is := range r.issues {
		if is.Number == number {
			return is, nil
		}
	}
	return nil, fmt.Errorf("issue %s#%d: %w", r.info, number, forge.ErrNotFound)
}

// labelsOf returns the label list of a pull request or issue, by number.
func (f *Fake) labelsOf(r *repo, number int) (*[]string, error) {
	if p, err := f.findPull(r, number); err == nil {
		return &p.pr.Labels, nil
	}
	is, err := f.findIssue(r, number)
	if err != nil {
		return nil, err
	}
	return &is.Labels, nil
}

func (f *Fake) snapshot(r *repo, p *pull, detailed bool) forge.PullRequest {
	pr := p.pr
	pr.Labels = slices.Clone(pr.Labels)
	pr.RequestedReviewers = slices.Clone(pr.RequestedReviewers)
	pr.RequestedTeams = slices.Clone(pr.RequestedTeams)
	pr.Mergeable, pr.MergeableState = nil, ""
	if pr.State == forge.StateOpen {
		if sha, ok := r.branches[pr.BaseRef]; ok {
			pr.BaseSHA = sha
		}
	}
	if detailed && pr.State == forge.StateOpen {
		st, _, _ := f.mergeState(r, p)
		m := st != "dirty"
		pr.Mergeable, pr.MergeableState = &m, st
	}
	return pr
}

func sortedUnique(list []string) []string {
	sort.Strings(list)
	return slices.Compact(list)
}
