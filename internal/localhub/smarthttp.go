package localhub

import (
	"net/http"
	"net/http/cgi"
	"path/filepath"
	"strings"
)

// gitServices are the smart-HTTP endpoints under a repository's URL.
var gitServices = map[string]bool{"info/refs": true, "git-upload-pack": true, "git-receive-pack": true, "HEAD": true}

// gitPath splits /{owner}/{repo}[.git]/{service} into its parts.
func gitPath(p string) (owner, repo, rest string, ok bool) {
	segs := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	if len(segs) != 3 || !gitServices[segs[2]] || segs[0] == "repos" {
		return "", "", "", false
	}
	return unescape(segs[0]), strings.TrimSuffix(unescape(segs[1]), ".git"), segs[2], true
}

// serveGit runs the real git http-backend for clone, fetch and push,
// authenticated like GitHub (basic auth, the token as password). A push
// holds the hub's lock so the refs it moves reach pull requests and
// webhooks exactly as REST ref updates do.
func (h *Hub) serveGit(w http.ResponseWriter, r *http.Request, owner, name, rest string) {
	template := "/{owner}/{repo}.git/" + rest
	entry := h.reqlog.add(r.Method, template, r.URL.Path, h.clock.Now())
	if h.faults.apply(w, r, template, h.clock.Now()) {
		entry.setStatus(-1)
		return
	}
	_, password, hasAuth := r.BasicAuth()
	h.mu.Lock()
	tok := h.st.Tokens[password]
	rs := h.repoByName(owner + "/" + name)
	var inst *installation
	valid := tok != nil && !tok.expired(h.clock.Now())
	if valid {
		for _, i := range h.st.Installations {
			if i.ID == tok.Installation {
				inst = i
			}
		}
	}
	// The pusher: the App's bot, or the person whose token it is.
	pusher, email := h.botLogin(), h.botEmail()
	person := valid && tok.User != ""
	if person {
		pusher, email = tok.User, tok.User+"@users.noreply.localhost"
	}
	h.mu.Unlock()
	if !hasAuth || !valid || (inst == nil && !person) {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(
			w,
			"Invalid username or token. Password authentication is not supported for Git operations.",
			http.StatusUnauthorized,
		)
		entry.setStatus(http.StatusUnauthorized)
		return
	}
	if rs == nil || (!person && !h.tokenCovers(inst, tok, rs)) {
		http.Error(w, "Repository not found.", http.StatusNotFound)
		entry.setStatus(http.StatusNotFound)
		return
	}
	push := rest == "git-receive-pack" || (rest == "info/refs" && r.URL.Query().Get("service") == "git-receive-pack")
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + rs.Owner + "/" + rs.Name + ".git/" + rest
	r2.URL.RawPath = ""
	backend := &cgi.Handler{
		Path: h.backend,
		Env: gitEnv("GIT_PROJECT_ROOT="+filepath.Join(h.dir, "repos"), "GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER="+pusher, "GIT_COMMITTER_NAME="+pusher, "GIT_COMMITTER_EMAIL="+email),
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	if !push || r.Method != http.MethodPost {
		backend.ServeHTTP(sw, r2)
		entry.setStatus(sw.status)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.gitFor(rs)
	if err := h.writeProtection(rs, g); err != nil {
		h.logger.Error("writing branch protection", "repo", rs.fullName(), "err", err)
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	before, err := g.refs()
	if err != nil {
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	backend.ServeHTTP(sw, r2)
	entry.setStatus(sw.status)
	after, err := g.refs()
	if err != nil {
		h.logger.Error("reading refs after push", "repo", rs.fullName(), "err", err)
		return
	}
	for ref, sha := range after {
		if before[ref] != sha {
			h.refChanged(rs, g, ref, before[ref], sha, pusher)
		}
	}
	for ref, sha := range before {
		if _, ok := after[ref]; !ok {
			h.refChanged(rs, g, ref, sha, "", pusher)
		}
	}
	if err := h.persist(); err != nil {
		h.logger.Error("saving hub state", "err", err)
	}
}

// statusWriter remembers the status for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the status and passes it on.
func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
