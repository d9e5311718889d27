package localhub

import (
	"encoding/base64"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"
)

// The Git database API: refs, blobs, trees and commits, as GitHub Apps use
// it to make commits GitHub signs for them.

func (h *Hub) renderRef(rs *repoState, g *gitRepo, ref, sha string) obj {
	typ, _ := g.objectType(sha)
	return obj{"ref": ref, "node_id": nodeID("REF", userID(ref)), "url": h.repoURL(rs) + "/git/" + ref,
		"object": obj{"type": typ, "sha": sha, "url": h.repoURL(rs) + "/git/" + typ + "s/" + sha}}
}

// pathRefs is the ref the request path names ("refs/" + {ref}: a ref, or a
// prefix of refs) and the repository's refs; false once an error response
// is written.
func (c *call) pathRefs() (ref string, refs map[string]string, ok bool) {
	if !c.loadRepo() {
		return "", nil, false
	}
	refs, err := c.git.refs()
	if err != nil {
		c.internal(err)
		return "", nil, false
	}
	return "refs/" + c.p["ref"], refs, true
}

func (h *Hub) getRef(c *call) {
	ref, refs, ok := c.pathRefs()
	if !ok {
		return
	}
	sha, ok := refs[ref]
	if !ok {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	c.json(http.StatusOK, h.renderRef(c.repo, c.git, ref, sha))
}

// listMatchingRefs serves git/matching-refs/{prefix} and git/refs[/{prefix}].
func (h *Hub) listMatchingRefs(c *call) {
	prefix, refs, ok := c.pathRefs()
	if !ok {
		return
	}
	var names []string
	for ref := range refs {
		if strings.HasPrefix(ref, prefix) {
			names = append(names, ref)
		}
	}
	sort.Strings(names)
	out := []obj{}
	for _, n := range names {
		out = append(out, h.renderRef(c.repo, c.git, n, refs[n]))
	}
	c.json(http.StatusOK, paginate(c, out))
}

func validRefName(ref string) bool {
	if !strings.HasPrefix(ref, "refs/") || strings.Count(ref, "/") < 2 {
		return false
	}
	for _, bad := range []string{"..", "//", "@{", "\\", " ", "~", "^", ":", "?", "*", "["} {
		if strings.Contains(ref, bad) {
			return false
		}
	}
	return !strings.HasSuffix(ref, "/") && !strings.HasSuffix(ref, ".lock") && !strings.HasSuffix(ref, ".")
}

func (h *Hub) createRef(c *call) {
	if !c.loadRepo() {
		return
	}
	var body struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	if !c.decode(&body) {
		return
	}
	if !validRefName(body.Ref) {
		c.invalid("Reference name is invalid") // GitHub: "ref must be formatted as refs/..."
		return
	}
	if _, err := c.git.objectType(body.SHA); err != nil {
		c.invalid("Object does not exist")
		return
	}
	refs, err := c.git.refs()
	if err != nil {
		c.internal(err)
		return
	}
	if _, ok := refs[body.Ref]; ok {
		c.invalid("Reference already exists")
		return
	}
	if err := c.git.updateRef(body.Ref, body.SHA, ""); err != nil {
		c.invalid("Reference already exists")
		return
	}
	h.refChanged(c.repo, c.git, body.Ref, "", body.SHA, c.actor())
	c.json(http.StatusCreated, h.renderRef(c.repo, c.git, body.Ref, body.SHA))
}

func (h *Hub) updateRef(c *call) {
	if !c.loadRepo() {
		return
	}
	ref := "refs/" + c.p["ref"]
	var body struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if !c.decode(&body) {
		return
	}
	refs, err := c.git.refs()
	if err != nil {
		c.internal(err)
		return
	}
	old, ok := refs[ref]
	if !ok {
		c.invalid("Reference does not exist")
		return
	}
	if _, err := c.git.objectType(body.SHA); err != nil {
		c.invalid("Object does not exist")
		return
	}
	if !body.Force {
		if ff, _ := c.git.isAncestor(old, body.SHA); !ff {
			c.invalid("Update is not a fast forward")
			return
		}
	}
	if msg := h.protectionRefusal(c.repo, c.git, ref, old, body.SHA); msg != "" {
		c.invalid(msg)
		return
	}
	if err := c.git.updateRef(ref, body.SHA, old); err != nil {
		c.invalid("Reference cannot be updated")
		return
	}
	h.refChanged(c.repo, c.git, ref, old, body.SHA, c.actor())
	c.json(http.StatusOK, h.renderRef(c.repo, c.git, ref, body.SHA))
}

func (h *Hub) deleteRef(c *call) {
	ref, refs, ok := c.pathRefs()
	if !ok {
		return
	}
	old, ok := refs[ref]
	if !ok {
		c.invalid("Reference does not exist")
		return
	}
	if ref == "refs/heads/"+c.repo.DefaultBranch {
		c.invalid("Cannot delete the default branch")
		return
	}
	if msg := h.protectionRefusal(c.repo, c.git, ref, old, ""); msg != "" {
		c.invalid(msg)
		return
	}
	if err := c.git.deleteRef(ref, old); err != nil {
		c.internal(err)
		return
	}
	h.refChanged(c.repo, c.git, ref, old, "", c.actor())
	c.json(http.StatusNoContent, nil)
}

func (h *Hub) createBlob(c *call) {
	if !c.loadRepo() {
		return
	}
	var body struct {
		Content  *string `json:"content"`
		Encoding string  `json:"encoding"`
	}
	if !c.decode(&body) {
		return
	}
	if body.Content == nil {
		c.invalid("Invalid request.\n\n\"content\" wasn't supplied.")
		return
	}
	data := []byte(*body.Content)
	switch body.Encoding {
	case "", "utf-8":
	case "base64":
		dec, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(*body.Content, "\n", ""))
		if err != nil {
			c.invalid("Invalid request.\n\ncontent is not valid Base64")
			return
		}
		data = dec
	default:
		c.invalid("Invalid request.\n\nencoding must be utf-8 or base64")
		return
	}
	sha, err := c.git.hashObject("blob", data)
	if err != nil {
		c.internal(err)
		return
	}
	c.json(http.StatusCreated, obj{"sha": sha, "url": h.repoURL(c.repo) + "/git/blobs/" + sha})
}

func (h *Hub) getBlob(c *call) {
	if !c.loadRepo() {
		return
	}
	data, err := c.git.catFile("blob", c.p["sha"])
	if err != nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	if c.wantsRaw() {
		c.raw(data)
		return
	}
	c.json(http.StatusOK, obj{"sha": c.p["sha"], "node_id": nodeID("B", userID(c.p["sha"])), "size": len(data),
		"url": h.repoURL(
			c.repo,
		) + "/git/blobs/" + c.p["sha"], "content": wrap60(base64.StdEncoding.EncodeToString(data)), "encoding": "base64"})
}

func (h *Hub) getTree(c *call) {
	if !c.loadRepo() {
		return
	}
	sha := c.p["sha"]
	// GitHub accepts a tree SHA, a commit SHA or a branch name here.
	if t, err := c.git.objectType(sha); err != nil || t != "tree" {
		co, err := c.git.resolveCommit(sha)
		if err != nil {
			c.fail(http.StatusNotFound, "Not Found")
			return
		}
		sha, _ = c.git.out(nil, nil, "rev-parse", co+"^{tree}")
	}
	recursive := c.query("recursive") != "" && c.query("recursive") != "0" && c.query("recursive") != "false"
	entries, err := c.git.lsTree(sha, recursive)
	if err != nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	out := []obj{}
	for _, e := range entries {
		o := obj{
			"path": e.Path,
			"mode": e.Mode,
			"type": e.Type,
			"sha":  e.SHA,
			"url":  h.repoURL(c.repo) + "/git/" + e.Type + "s/" + e.SHA,
		}
		if e.Type == "blob" {
			o["size"] = e.Size
		}
		out = append(out, o)
	}
	c.json(http.StatusOK, obj{"sha": sha, "url": h.repoURL(c.repo) + "/git/trees/" + sha, "tree": out, "truncated": false})
}

// createTree builds a tree from base_tree plus entries whose paths may be
// nested ("a/b/c.yaml"), as GitHub does; a null sha deletes the path.
func (h *Hub) createTree(c *call) {
	if !c.loadRepo() {
		return
	}
	var body struct {
		BaseTree string `json:"base_tree"`
		Tree     []struct {
			Path    string  `json:"path"`
			Mode    string  `json:"mode"`
			Type    string  `json:"type"`
			SHA     *string `json:"sha"`
			Content *string `json:"content"`
		} `json:"tree"`
	}
	if !c.decode(&body) {
		return
	}
	files := map[string]treeEntry{} // full path -> blob/commit entry
	if body.BaseTree != "" {
		entries, err := c.git.lsTree(body.BaseTree, true)
		if err != nil {
			c.invalid("Invalid request.\n\nbase_tree is not a valid tree")
			return
		}
		for _, e := range entries {
			if e.Type != "tree" {
				files[e.Path] = e
			}
		}
	}
	for i, e := range body.Tree {
		p := strings.Trim(e.Path, "/")
		if p == "" || strings.Contains(p, "//") || path.Clean(p) != p || strings.HasPrefix(p, "../") {
			c.invalid(
				"tree.path contains a malformed path component",
				obj{"resource": "Tree", "field": "tree", "code": "invalid", "index": i},
			)
			return
		}
		switch e.Mode {
		case "100644", "100755", "040000", "160000", "120000":
		default:
			c.invalid(
				"tree.mode contains an invalid value",
				obj{"resource": "Tree", "field": "tree", "code": "invalid", "index": i},
			)
			return
		}
		if e.Type == "" {
			e.Type = map[string]string{"040000": "tree", "160000": "commit"}[e.Mode]
			if e.Type == "" {
				e.Type = "blob"
			}
		}
		switch {
		case e.Content != nil:
			sha, err := c.git.hashObject("blob", []byte(*e.Content))
			if err != nil {
				c.internal(err)
				return
			}
			files[p] = treeEntry{Mode: e.Mode, Type: "blob", SHA: sha, Path: p}
		case e.SHA == nil:
			for k := range files {
				if k == p || strings.HasPrefix(k, p+"/") {
					delete(files, k)
				}
			}
		case e.Type == "tree":
			sub, err := c.git.lsTree(*e.SHA, true)
			if err != nil {
				c.invalid("Invalid tree info", obj{"resource": "Tree", "field": "tree", "code": "invalid", "index": i})
				return
			}
			for _, s := range sub {
				if s.Type != "tree" {
					s.Path = p + "/" + s.Path
					files[s.Path] = s
				}
			}
		default:
			if e.Type == "blob" {
				if t, err := c.git.objectType(*e.SHA); err != nil || t != "blob" {
					c.invalid("Invalid tree info", obj{"resource": "Tree", "field": "tree", "code": "invalid", "index": i})
					return
				}
			}
			files[p] = treeEntry{Mode: e.Mode, Type: e.Type, SHA: *e.SHA, Path: p}
		}
	}
	sha, err := c.git.buildTree(files)
	if err != nil {
		c.internal(err)
		return
	}
	c.p["sha"] = sha
	c.r.URL.RawQuery = "recursive=1"
	h.getTree(c)
	if c.w.status == http.StatusOK {
		c.w.status = http.StatusCreated
	}
}

func (h *Hub) getGitCommit(c *call) {
	if !c.loadRepo() {
		return
	}
	co, err := c.git.readCommit(c.p["sha"])
	if err != nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	c.json(http.StatusOK, h.renderGitCommit(c.repo, co))
}

type apiPerson struct {
	Name  string     `json:"name"`
	Email string     `json:"email"`
	Date  *time.Time `json:"date"`
}

func (h *Hub) createGitCommit(c *call) {
	if !c.loadRepo() {
		return
	}
	var body struct {
		Message   *string    `json:"message"`
		Tree      string     `json:"tree"`
		Parents   []string   `json:"parents"`
		Author    *apiPerson `json:"author"`
		Committer *apiPerson `json:"committer"`
		Signature string     `json:"signature"`
	}
	if !c.decode(&body) {
		return
	}
	if body.Message == nil {
		c.invalid("Invalid request.\n\n\"message\" wasn't supplied.")
		return
	}
	if t, err := c.git.objectType(body.Tree); err != nil || t != "tree" {
		c.invalid("Tree SHA does not exist")
		return
	}
	for _, p := range body.Parents {
		if t, err := c.git.objectType(p); err != nil || t != "commit" {
			c.invalid("Parent SHA does not exist or is not a commit object")
			return
		}
	}
	bot := person{Name: h.botLogin(), Email: h.botEmail(), When: h.now()}
	author := bot
	if body.Author != nil {
		author = person{Name: body.Author.Name, Email: body.Author.Email, When: h.now()}
		if body.Author.Date != nil {
			author.When = *body.Author.Date
		}
	}
	// As documented by GitHub: the committer defaults to the author.
	committer := author
	if body.Author == nil {
		committer = bot
	}
	if body.Committer != nil {
		committer = person{Name: body.Committer.Name, Email: body.Committer.Email, When: h.now()}
		if body.Committer.Date != nil {
			committer.When = *body.Committer.Date
		}
	}
	co := &commitObject{
		Tree:      body.Tree,
		Parents:   body.Parents,
		Author:    author,
		Committer: committer,
		Message:   *body.Message,
		Signature: body.Signature,
	}
	sha, err := c.git.writeCommit(co)
	if err != nil {
		c.internal(err)
		return
	}
	co.SHA = sha
	// GitHub signs the commits it creates for an App when the App supplies no
	// signature and no committer of its own.
	if body.Signature == "" && body.Committer == nil {
		if c.repo.Verified == nil {
			c.repo.Verified = map[string]bool{}
		}
		c.repo.Verified[sha] = true
	}
	c.json(http.StatusCreated, h.renderGitCommit(c.repo, co))
}

func (h *Hub) botEmail() string {
	return strings.TrimSuffix(h.botLogin(), "[bot]") + "[bot]@users.noreply.localhost"
}
