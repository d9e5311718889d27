package localhub

import (
	"encoding/base64"
	"net/http"
	"strings"
)

// putContents serves the contents API's create/update (PUT) and delete
// (DELETE): one commit on the branch, made and signed by GitHub for the App.
func (h *Hub) putContents(c *call) {
	if !c.loadRepo() {
		return
	}
	del := c.r.Method == http.MethodDelete
	var body struct {
		Message   *string    `json:"message"`
		Content   *string    `json:"content"`
		SHA       string     `json:"sha"`
		Branch    string     `json:"branch"`
		Author    *apiPerson `json:"author"`
		Committer *apiPerson `json:"committer"`
	}
	if !c.decode(&body) {
		return
	}
	p := strings.Trim(c.p["path"], "/")
	switch {
	case body.Message == nil:
		c.invalid("Invalid request.\n\n\"message\" wasn't supplied.")
		return
	case !del && body.Content == nil:
		c.invalid("Invalid request.\n\n\"content\" wasn't supplied.")
		return
	case del && body.SHA == "":
		c.invalid("Invalid request.\n\n\"sha\" wasn't supplied.")
		return
	}
	var data []byte
	if !del {
		var err error
		if data, err = base64.StdEncoding.DecodeString(strings.ReplaceAll(*body.Content, "\n", "")); err != nil {
			c.invalid("Invalid request.\n\ncontent is not valid Base64")
			return
		}
	}
	branch := body.Branch
	if branch == "" {
		branch = c.repo.DefaultBranch
	}
	tip, err := c.git.branchSHA(branch)
	if err != nil {
		c.fail(http.StatusNotFound, "Branch "+branch+" not found")
		return
	}
	entries, err := c.git.lsTree(tip, true)
	if err != nil {
		c.internal(err)
		return
	}
	files := map[string]treeEntry{}
	for _, e := range entries {
		if e.Type != "tree" {
			files[e.Path] = e
		}
	}
	old, exists := files[p]
	switch {
	case del && !exists:
		c.fail(http.StatusNotFound, "Not Found")
		return
	case exists && body.SHA == "":
		c.invalid("Invalid request.\n\n\"sha\" wasn't supplied.")
		return
	case exists && body.SHA != old.SHA:
		c.fail(http.StatusConflict, p+" does not match "+body.SHA)
		return
	}
	if del {
		delete(files, p)
	} else {
		blob, err := c.git.hashObject("blob", data)
		if err != nil {
			c.internal(err)
			return
		}
		mode := "100644"
		if exists {
			mode = old.Mode
		}
		files[p] = treeEntry{Mode: mode, Type: "blob", SHA: blob, Path: p}
	}
	tree, err := c.git.buildTree(files)
	if err != nil {
		c.internal(err)
		return
	}
	bot := person{Name: h.botLogin(), Email: h.botEmail(), When: h.now()}
	author, committer := bot, bot
	if body.Author != nil {
		author = person{Name: body.Author.Name, Email: body.Author.Email, When: h.now()}
		committer = author
	}
	if body.Committer != nil {
		committer = person{Name: body.Committer.Name, Email: body.Committer.Email, When: h.now()}
	}
	co := &commitObject{Tree: tree, Parents: []string{tip}, Author: author, Committer: committer, Message: *body.Message}
	sha, err := c.git.writeCommit(co)
	if err != nil {
		c.internal(err)
		return
	}
	co.SHA = sha
	ref := "refs/heads/" + branch
	if msg := h.protectionRefusal(c.repo, c.git, ref, tip, sha); msg != "" {
		c.fail(http.StatusConflict, msg)
		return
	}
	if err := c.git.updateRef(ref, sha, tip); err != nil {
		c.fail(http.StatusConflict, "is at "+tip+" but expected another commit")
		return
	}
	if body.Committer == nil {
		if c.repo.Verified == nil {
			c.repo.Verified = map[string]bool{}
		}
		c.repo.Verified[sha] = true
	}
	h.refChanged(c.repo, c.git, ref, tip, sha, c.actor())
	resp := obj{"content": nil, "commit": h.renderGitCommit(c.repo, co)}
	status := http.StatusOK
	if !del {
		c.r.URL.RawQuery = "ref=" + branch
		c.refCommit = sha
		resp["content"] = h.contentEntry(c, files[p], p, "file")
		if !exists {
			status = http.StatusCreated
		}
	}
	c.json(status, resp)
}

// listPullsForCommit serves commits/{sha}/pulls: pull requests whose head
// is the commit, or that merged it.
func (h *Hub) listPullsForCommit(c *call) {
	if !c.loadRepo() {
		return
	}
	sha, ok := c.refSHA()
	if !ok {
		return
	}
	out := []obj{}
	for _, is := range c.repo.Issues {
		if is.Pull != nil && (is.Pull.HeadSHA == sha || is.Pull.MergeCommitSHA == sha) {
			out = append(out, h.renderPull(c.repo, c.git, is, false))
		}
	}
	c.json(http.StatusOK, paginate(c, out))
}
