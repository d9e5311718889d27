package localhub

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// RepoOptions describes a repository for CreateRepo.
type RepoOptions struct {
	Owner, Name   string
	DefaultBranch string            // "main" when empty
	Dir           string            // a folder imported as the default branch's one commit
	Files         map[string]string // or file contents by path
	Private       bool
	// AllowAutoMerge is the repository setting GraphQL auto-merge needs.
	AllowAutoMerge bool
}

// ErrRepoExists is returned by CreateRepo for a name already taken.
var ErrRepoExists = errors.New("repository already exists")

// CreateRepo creates a repository whose default branch holds one commit with
// the given folder or files.
func (h *Hub) CreateRepo(o RepoOptions) error {
	if !validName(o.Owner) || !validName(o.Name) {
		return fmt.Errorf("repository %q: invalid owner or name", o.Owner+"/"+o.Name)
	}
	if o.DefaultBranch == "" {
		o.DefaultBranch = "main"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	full := o.Owner + "/" + o.Name
	if h.repoByName(full) != nil {
		return fmt.Errorf("repository %s: %w", full, ErrRepoExists)
	}
	src := o.Dir
	if src != "" {
		abs, err := filepath.Abs(src)
		if err != nil {
			return fmt.Errorf("repository %s: %w", full, err)
		}
		src = abs
	}
	if src == "" {
		tmp, err := os.MkdirTemp("", "localhub-import-")
		if err != nil {
			return fmt.Errorf("repository %s: %w", full, err)
		}
		defer os.RemoveAll(tmp)
		for p, content := range o.Files {
			dst := filepath.Join(tmp, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return fmt.Errorf("repository %s: %w", full, err)
			}
			if err := os.WriteFile(dst, []byte(content), 0o644); err != nil {
				return fmt.Errorf("repository %s: %w", full, err)
			}
		}
		src = tmp
	}
	g, err := initBare(h.repoDir(o.Owner, o.Name), o.DefaultBranch)
	if err != nil {
		return fmt.Errorf("repository %s: %w", full, err)
	}
	who := person{Name: o.Owner, Email: o.Owner + "@users.noreply.localhost", When: h.now()}
	if _, err := g.importDir(src, o.DefaultBranch, who, "Initial commit\n"); err != nil {
		return fmt.Errorf("repository %s: %w", full, err)
	}
	h.st.Repos[full] = &repoState{ID: h.st.newID(), Owner: o.Owner, Name: o.Name, DefaultBranch: o.DefaultBranch,
		Private: o.Private, AllowAutoMerge: o.AllowAutoMerge, AllowMerge: true, AllowSquash: true, AllowRebase: true,
		Created: h.now(), NextNumber: 1}
	return h.persist()
}

// HasRepo reports whether owner/name exists.
func (h *Hub) HasRepo(full string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.repoByName(full) != nil
}

// Install installs the App on an account (all its repositories) and returns
// the installation id; installing twice returns the same id.
func (h *Hub) Install(account string) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, inst := range h.st.Installations {
		if strings.EqualFold(inst.Account, account) {
			return inst.ID, nil
		}
	}
	inst := &installation{ID: h.st.newID(), Account: account, Created: h.now()}
	h.st.Installations = append(h.st.Installations, inst)
	return inst.ID, h.persist()
}

// SetBranchProtection requires the named checks (check run names or status
// contexts) to be green before a pull request into branch can merge.
func (h *Hub) SetBranchProtection(full, branch string, requiredChecks ...string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.repoByName(full)
	if rs == nil {
		return fmt.Errorf("repository %s: not found", full)
	}
	if rs.Protection == nil {
		rs.Protection = map[string]*protection{}
	}
	rs.Protection[branch] = &protection{RequiredChecks: append([]string{}, requiredChecks...)}
	return h.persist()
}

// SetAllowAutoMerge switches the repository's "Allow auto-merge" setting.
func (h *Hub) SetAllowAutoMerge(full string, allow bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.repoByName(full)
	if rs == nil {
		return fmt.Errorf("repository %s: not found", full)
	}
	rs.AllowAutoMerge = allow
	return h.persist()
}

// SetPermission sets a user's permission level on a repository: read,
// triage, write, maintain or admin. A user never set has write. A push by
// a user below write (a contributor pushing to their fork's head branch,
// on GitHub) cancels auto-merge; one with write keeps it armed.
func (h *Hub) SetPermission(full, login, level string) error {
	switch level {
	case "read", "triage", "write", "maintain", "admin":
	default:
		return fmt.Errorf("permission %q: want read, triage, write, maintain or admin", level)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.repoByName(full)
	if rs == nil {
		return fmt.Errorf("repository %s: not found", full)
	}
	if rs.Permissions == nil {
		rs.Permissions = map[string]string{}
	}
	rs.Permissions[login] = level
	return h.persist()
}

// canWrite reports whether actor has write access to rs: the App's bot
// (its installation has contents: write) and users at write or above.
func (h *Hub) canWrite(rs *repoState, actor string) bool {
	if actor == h.botLogin() {
		return true
	}
	switch rs.Permissions[actor] {
	case "", "write", "maintain", "admin":
		return true
	}
	return false
}

func validName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 100 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return !strings.HasSuffix(s, ".git")
}

// --- App and installations (JWT) ---

func (h *Hub) getApp(c *call) { c.json(http.StatusOK, h.renderApp()) }

func (h *Hub) listAppInstallations(c *call) {
	out := []obj{}
	for _, inst := range h.st.Installations {
		out = append(out, h.renderInstallation(inst))
	}
	c.json(http.StatusOK, paginate(c, out))
}

func (h *Hub) installationByID(s string) *installation {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil
	}
	for _, inst := range h.st.Installations {
		if inst.ID == id {
			return inst
		}
	}
	return nil
}

func (h *Hub) getAppInstallation(c *call) {
	inst := h.installationByID(c.p["id"])
	if inst == nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	c.json(http.StatusOK, h.renderInstallation(inst))
}

func (h *Hub) createAccessToken(c *call) {
	inst := h.installationByID(c.p["id"])
	if inst == nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	if inst.SuspendedAt != nil {
		c.fail(http.StatusForbidden, suspendedMessage)
		return
	}
	var body struct {
		Repositories  []string `json:"repositories"`
		RepositoryIDs []int64  `json:"repository_ids"`
	}
	if !c.decode(&body) {
		return
	}
	var scoped []*repoState
	for _, name := range body.Repositories {
		rs := h.repoByName(inst.Account + "/" + name)
		if rs == nil {
			c.invalid("There is at least one repository that does not exist or is not accessible to the parent installation.")
			return
		}
		scoped = append(scoped, rs)
	}
	for _, id := range body.RepositoryIDs {
		var found *repoState
		for _, rs := range h.st.Repos {
			if rs.ID == id && strings.EqualFold(rs.Owner, inst.Account) {
				found = rs
			}
		}
		if found == nil {
			c.invalid("There is at least one repository that does not exist or is not accessible to the parent installation.")
			return
		}
		scoped = append(scoped, found)
	}
	var names []string
	for _, rs := range scoped {
		names = append(names, rs.fullName())
	}
	token, at := h.issueToken(inst, names)
	resp := obj{
		"token":                token,
		"expires_at":           ts(at.ExpiresAt),
		"permissions":          h.permissionsObj(),
		"repository_selection": "all",
	}
	if len(scoped) > 0 {
		repos := []obj{}
		for _, rs := range scoped {
			repos = append(repos, h.renderRepo(rs))
		}
		resp["repository_selection"], resp["repositories"] = "selected", repos
	}
	c.json(http.StatusCreated, resp)
}

func (h *Hub) installationFor(account string) *installation {
	for _, inst := range h.st.Installations {
		if strings.EqualFold(inst.Account, account) {
			return inst
		}
	}
	return nil
}

func (h *Hub) getRepoInstallation(c *call) {
	rs := h.repoByName(c.p["owner"] + "/" + c.p["repo"])
	var inst *installation
	if rs != nil {
		inst = h.installationFor(rs.Owner)
	}
	if inst == nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	c.json(http.StatusOK, h.renderInstallation(inst))
}

func (h *Hub) getAccountInstallation(c *call) {
	inst := h.installationFor(c.p["account"])
	if inst == nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	c.json(http.StatusOK, h.renderInstallation(inst))
}

func (h *Hub) listInstallationRepos(c *call) {
	var repos []*repoState
	for _, rs := range h.st.Repos {
		if c.canSee(rs) {
			repos = append(repos, rs)
		}
	}
	sort.Slice(repos, func(i, j int) bool { return repos[i].ID < repos[j].ID })
	out := []obj{}
	for _, rs := range repos {
		out = append(out, h.renderRepo(rs))
	}
	sel := "all"
	if c.tok != nil && len(c.tok.Repos) > 0 {
		sel = "selected"
	}
	c.json(http.StatusOK, obj{"total_count": len(out), "repository_selection": sel, "repositories": paginate(c, out)})
}

// --- repositories ---

func (h *Hub) getRepo(c *call) {
	if !c.loadRepo() {
		return
	}
	c.json(http.StatusOK, h.renderRepo(c.repo))
}

// resolveRef finds the commit for a ref query parameter: a branch, tag or
// SHA, the default branch when empty. It answers 404 itself when none.
func (c *call) resolveRef(ref string) (string, bool) {
	if ref == "" {
		ref = c.repo.DefaultBranch
	}
	for _, cand := range []string{"refs/heads/" + ref, "refs/tags/" + ref, ref} {
		if sha, err := c.git.resolveCommit(cand); err == nil {
			c.refCommit = sha
			return sha, true
		}
	}
	c.fail(http.StatusNotFound, "No commit found for the ref "+ref)
	return "", false
}

// getRaw serves the download_url of a file: /raw/{owner}/{repo}/{sha}/{path}.
func (h *Hub) getRaw(c *call) {
	if !c.loadRepo() {
		return
	}
	sha, err := c.git.resolveCommit(c.p["sha"]) // refuses option-like input before it reaches git
	var data []byte
	if err == nil {
		data, err = c.git.catFile(
			"blob",
			orEmpty(c.git.out(nil, nil, "rev-parse", "--verify", "--quiet", sha+":"+c.p["path"])),
		)
	}
	if err != nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	c.raw(data)
}

// orEmpty drops the error of a lookup whose failure the caller detects anyway.
func orEmpty(s string, err error) string {
	if err != nil {
		return ""
	}
	return s
}

func (h *Hub) getContents(c *call) {
	if !c.loadRepo() {
		return
	}
	p := strings.Trim(c.p["path"], "/")
	sha, ok := c.resolveRef(c.query("ref"))
	if !ok {
		return
	}
	if p == "" {
		h.listDir(c, sha, "")
		return
	}
	entries, err := c.git.lsTree(sha+":"+path.Dir(p), false)
	if path.Dir(p) == "." {
		entries, err = c.git.lsTree(sha, false)
	}
	if err != nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	for _, e := range entries {
		if e.Path != path.Base(p) {
			continue
		}
		switch {
		case e.Type == "tree":
			h.listDir(c, sha, p)
		case e.Type == "commit":
			c.json(http.StatusOK, h.contentEntry(c, e, p, "submodule"))
		case e.Mode == "120000":
			target, _ := c.git.catFile("blob", e.SHA)
			// As GitHub: a symlink to a regular file in the repository is
			// answered with that file's content; any other, described.
			if te, tp, ok := h.linkTarget(c, sha, p, string(target)); ok {
				h.fileContent(c, te, tp)
				return
			}
			o := h.contentEntry(c, e, p, "symlink")
			o["target"] = string(target)
			c.json(http.StatusOK, o)
		default:
			h.fileContent(c, e, p)
		}
		return
	}
	c.fail(http.StatusNotFound, "Not Found")
}

// linkTarget resolves the symlink at p (target read from its blob) to the
// regular file it names inside the repository at sha.
func (h *Hub) linkTarget(c *call, sha, p, target string) (treeEntry, string, bool) {
	if target == "" || path.IsAbs(target) {
		return treeEntry{}, "", false
	}
	tp := path.Join(path.Dir(p), target)
	if tp == ".." || strings.HasPrefix(tp, "../") {
		return treeEntry{}, "", false
	}
	entries, err := c.git.lsTree(sha+":"+path.Dir(tp), false)
	if path.Dir(tp) == "." {
		entries, err = c.git.lsTree(sha, false)
	}
	if err != nil {
		return treeEntry{}, "", false
	}
	for _, e := range entries {
		if e.Path == path.Base(tp) && e.Type == "blob" && (e.Mode == "100644" || e.Mode == "100755") {
			return e, tp, true
		}
	}
	return treeEntry{}, "", false
}

// fileContent answers a contents read of the regular file e at p.
func (h *Hub) fileContent(c *call, e treeEntry, p string) {
	data, err := c.git.catFile("blob", e.SHA)
	if err != nil {
		c.internal(err)
		return
	}
	if c.wantsRaw() {
		c.raw(data)
		return
	}
	o := h.contentEntry(c, e, p, "file")
	// GitHub serves content up to 1 MB; larger files come with encoding "none".
	if len(data) > 1<<20 {
		o["encoding"], o["content"] = "none", ""
	} else {
		o["encoding"], o["content"] = "base64", wrap60(base64.StdEncoding.EncodeToString(data))
	}
	c.json(http.StatusOK, o)
}

func (h *Hub) listDir(c *call, sha, dir string) {
	treeish := sha
	if dir != "" {
		treeish = sha + ":" + dir
	}
	entries, err := c.git.lsTree(treeish, false)
	if err != nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	out := []obj{}
	for _, e := range entries {
		typ := map[string]string{"blob": "file", "tree": "dir", "commit": "submodule"}[e.Type]
		if e.Mode == "120000" {
			typ = "symlink"
		}
		out = append(out, h.contentEntry(c, e, path.Join(dir, e.Path), typ))
	}
	c.json(http.StatusOK, out)
}

// contentEntry renders one contents API entry of the commit resolveRef found.
func (h *Hub) contentEntry(c *call, e treeEntry, p, typ string) obj {
	sha := c.refCommit
	ref := c.query("ref")
	if ref == "" {
		ref = c.repo.DefaultBranch
	}
	u := h.repoURL(c.repo) + "/contents/" + p + "?ref=" + ref
	size := max(e.Size, 0)
	o := obj{"type": typ, "name": path.Base(p), "path": p, "sha": e.SHA, "size": size, "url": u,
		"git_url":  h.repoURL(c.repo) + "/git/blobs/" + e.SHA,
		"html_url": h.baseURL + "/" + c.repo.fullName() + "/blob/" + ref + "/" + p}
	o["download_url"] = nil
	if typ == "file" {
		o["download_url"] = h.baseURL + "/raw/" + c.repo.fullName() + "/" + sha + "/" + p
	}
	o["_links"] = obj{"self": u, "git": o["git_url"], "html": o["html_url"]}
	return o
}

func wrap60(s string) string {
	var b strings.Builder
	for len(s) > 60 {
		b.WriteString(s[:60] + "\n")
		s = s[60:]
	}
	b.WriteString(s)
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

// --- branches and protection ---

func (h *Hub) listBranches(c *call) {
	if !c.loadRepo() {
		return
	}
	refs, err := c.git.refs()
	if err != nil {
		c.internal(err)
		return
	}
	var names []string
	for ref := range refs {
		if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
			names = append(names, b)
		}
	}
	sort.Strings(names)
	out := []obj{}
	for _, b := range names {
		sha := refs["refs/heads/"+b]
		out = append(out, obj{"name": b, "protected": c.repo.Protection[b] != nil,
			"commit": obj{"sha": sha, "url": h.repoURL(c.repo) + "/commits/" + sha}})
	}
	c.json(http.StatusOK, paginate(c, out))
}

func (h *Hub) getBranch(c *call) {
	if !c.loadRepo() {
		return
	}
	b := c.p["branch"]
	sha, err := c.git.branchSHA(b)
	if err != nil {
		c.fail(http.StatusNotFound, "Branch not found")
		return
	}
	co, err := c.git.readCommit(sha)
	if err != nil {
		c.internal(err)
		return
	}
	prot := c.repo.Protection[b]
	o := obj{"name": b, "commit": h.renderRepoCommit(c.repo, co), "protected": prot != nil,
		"protection_url": h.repoURL(c.repo) + "/branches/" + b + "/protection",
		"_links": obj{
			"self": h.repoURL(c.repo) + "/branches/" + b,
			"html": h.baseURL + "/" + c.repo.fullName() + "/tree/" + b,
		}}
	o["protection"] = obj{
		"enabled":                false,
		"required_status_checks": obj{"enforcement_level": "off", "contexts": []string{}, "checks": []obj{}},
	}
	if prot != nil {
		checks := []obj{}
		for _, n := range prot.RequiredChecks {
			checks = append(checks, obj{"context": n, "app_id": nil})
		}
		o["protection"] = obj{
			"enabled":                true,
			"required_status_checks": obj{"enforcement_level": "non_admins", "contexts": prot.RequiredChecks, "checks": checks},
		}
	}
	c.json(http.StatusOK, o)
}

func (h *Hub) getProtection(c *call) {
	if !c.loadRepo() {
		return
	}
	prot := c.repo.Protection[c.p["branch"]]
	if prot == nil {
		c.fail(http.StatusNotFound, "Branch not protected")
		return
	}
	checks := []obj{}
	for _, ctx := range prot.RequiredChecks {
		checks = append(checks, obj{"context": ctx, "app_id": nil})
	}
	u := h.repoURL(c.repo) + "/branches/" + c.p["branch"] + "/protection"
	c.json(http.StatusOK, obj{"url": u,
		"required_status_checks": obj{
			"url":      u + "/required_status_checks",
			"strict":   prot.Strict,
			"contexts": prot.RequiredChecks,
			"checks":   checks,
		},
		"enforce_admins":     obj{"enabled": false, "url": u + "/enforce_admins"},
		"allow_force_pushes": obj{"enabled": false}, "allow_deletions": obj{"enabled": false}})
}

// --- commits ---

func (h *Hub) getCommit(c *call) {
	if !c.loadRepo() {
		return
	}
	ref := c.p["ref"]
	sha, err := c.git.resolveCommit(ref)
	if err != nil {
		if sha, err = c.git.resolveCommit("refs/heads/" + ref); err != nil {
			c.invalid("No commit found for SHA: " + ref)
			return
		}
	}
	co, err := c.git.readCommit(sha)
	if err != nil {
		c.internal(err)
		return
	}
	o := h.renderRepoCommit(c.repo, co)
	from := emptyTree
	if len(co.Parents) > 0 {
		from = co.Parents[0]
	}
	files, stats, err := c.git.diffFiles(from, sha)
	h.fileURLs(c.repo, sha, files)
	if err != nil {
		c.internal(err)
		return
	}
	o["files"], o["stats"] = files, stats
	c.json(http.StatusOK, o)
}

func (h *Hub) listCommits(c *call) {
	if !c.loadRepo() {
		return
	}
	sha, ok := c.resolveRef(c.query("sha"))
	if !ok {
		return
	}
	out, err := c.git.out(nil, nil, "rev-list", "--topo-order", sha)
	if err != nil {
		c.internal(err)
		return
	}
	list := []obj{}
	for _, s := range strings.Fields(out) {
		co, err := c.git.readCommit(s)
		if err != nil {
			c.internal(err)
			return
		}
		list = append(list, h.renderRepoCommit(c.repo, co))
	}
	c.json(http.StatusOK, paginate(c, list))
}

func (h *Hub) compare(c *call) {
	if !c.loadRepo() {
		return
	}
	base, head, ok := strings.Cut(c.p["basehead"], "...")
	if !ok {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	baseSHA, ok := c.resolveRef(base)
	if !ok {
		return
	}
	headSHA, ok := c.resolveRef(head)
	if !ok {
		return
	}
	mb, err := c.git.mergeBase(baseSHA, headSHA)
	if err != nil || mb == "" {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	ahead, _ := c.git.revList(mb, headSHA)
	behind, _ := c.git.revList(mb, baseSHA)
	status := "diverged"
	switch {
	case len(ahead) == 0 && len(behind) == 0:
		status = "identical"
	case len(behind) == 0:
		status = "ahead"
	case len(ahead) == 0:
		status = "behind"
	}
	commits := []obj{}
	for _, s := range ahead {
		co, _ := c.git.readCommit(s)
		commits = append(commits, h.renderRepoCommit(c.repo, co))
	}
	files, _, err := c.git.diffFiles(mb, headSHA)
	if err != nil {
		c.internal(err)
		return
	}
	bc, _ := c.git.readCommit(baseSHA)
	mbc, _ := c.git.readCommit(mb)
	h.fileURLs(c.repo, headSHA, files)
	cu := h.baseURL + "/" + c.repo.fullName() + "/compare/" + c.p["basehead"]
	c.json(
		http.StatusOK,
		obj{"url": h.repoURL(c.repo) + "/compare/" + c.p["basehead"], "html_url": cu, "permalink_url": cu,
			"diff_url": cu + ".diff", "patch_url": cu + ".patch", "status": status,
			"ahead_by": len(ahead), "behind_by": len(behind), "total_commits": len(ahead),
			"commits": commits, "files": files, "base_commit": h.renderRepoCommit(c.repo, bc),
			"merge_base_commit": h.renderRepoCommit(c.repo, mbc)},
	)
}
