package localhub

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// errNoObject is returned when a revision or object does not exist.
var errNoObject = errors.New("object does not exist")

// gitRepo drives one bare repository through the git command line. Refs and
// objects are never cached: git is the single source of truth, so a push
// through git http-backend and a REST call always agree.
type gitRepo struct {
	dir string
}

// gitEnv isolates git from the user's and the system's configuration.
func gitEnv(extra ...string) []string {
	env := append(
		os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
	)
	return append(env, extra...)
}

// run runs git in the repository. It returns the exit code separately, as
// several plumbing commands answer yes/no with it.
func (g *gitRepo) run(stdin []byte, env []string, args ...string) ([]byte, int, error) {
	cmd := exec.Command("git", append([]string{"--git-dir", g.dir}, args...)...)
	cmd.Env = gitEnv(env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.Bytes(), exit.ExitCode(), fmt.Errorf(
			"git %s: %s",
			strings.Join(args, " "),
			strings.TrimSpace(errb.String()),
		)
	}
	if err != nil {
		return nil, -1, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return out.Bytes(), 0, nil
}

func (g *gitRepo) out(stdin []byte, env []string, args ...string) (string, error) {
	b, _, err := g.run(stdin, env, args...)
	return strings.TrimSpace(string(b)), err
}

// initBare creates the bare repository with head as its default branch.
func initBare(dir, head string) (*gitRepo, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	cmd := exec.Command("git", "init", "--quiet", "--bare", "--initial-branch", head, dir)
	cmd.Env = gitEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git init %s: %s: %w", dir, strings.TrimSpace(string(out)), err)
	}
	g := &gitRepo{dir: dir}
	// http-backend refuses pushes unless told; the hub authenticates them itself.
	if _, err := g.out(nil, nil, "config", "http.receivepack", "true"); err != nil {
		return nil, err
	}
	return g, nil
}

// resolveCommit turns a revision (SHA, branch, refs/...) into a commit SHA.
func (g *gitRepo) resolveCommit(rev string) (string, error) {
	if rev == "" || strings.HasPrefix(rev, "-") {
		return "", errNoObject
	}
	out, code, err := g.run(nil, nil, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if code == 1 || (err != nil && code > 0) {
		return "", errNoObject
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// branchSHA returns the commit a branch points at, or errNoObject.
func (g *gitRepo) branchSHA(branch string) (string, error) {
	return g.resolveCommit("refs/heads/" + branch)
}

// refs lists every ref with the object it points at.
func (g *gitRepo) refs() (map[string]string, error) {
	out, err := g.out(nil, nil, "for-each-ref", "--format=%(objectname) %(refname)")
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if sha, name, ok := strings.Cut(line, " "); ok {
			refs[name] = sha
		}
	}
	return refs, nil
}

// objectType returns blob, tree, commit or tag, or errNoObject.
func (g *gitRepo) objectType(sha string) (string, error) {
	if !isSHA(sha) {
		return "", errNoObject
	}
	out, _, err := g.run(nil, nil, "cat-file", "-t", sha)
	if err != nil {
		return "", errNoObject
	}
	return strings.TrimSpace(string(out)), nil
}

func (g *gitRepo) catFile(typ, sha string) ([]byte, error) {
	if t, err := g.objectType(sha); err != nil || t != typ {
		return nil, errNoObject
	}
	b, _, err := g.run(nil, nil, "cat-file", typ, sha)
	return b, err
}

func (g *gitRepo) hashObject(typ string, data []byte) (string, error) {
	return g.out(data, nil, "hash-object", "-t", typ, "-w", "--stdin")
}

// updateRef moves ref to sha only if it still points at old ("" = must not
// exist), so concurrent writers cannot lose an update.
func (g *gitRepo) updateRef(ref, sha, old string) error {
	if old == "" {
		old = strings.Repeat("0", 40)
	}
	_, err := g.out(nil, nil, "update-ref", ref, sha, old)
	return err
}

func (g *gitRepo) deleteRef(ref, old string) error {
	_, err := g.out(nil, nil, "update-ref", "-d", ref, old)
	return err
}

// treeEntry is one line of a git tree.
type treeEntry struct {
	Mode string
	Type string
	SHA  string
	Size int64 // -1 for trees and submodules
	Path string
}

// lsTree lists a tree; recursive lists every blob with its full path.
func (g *gitRepo) lsTree(treeish string, recursive bool) ([]treeEntry, error) {
	args := []string{"ls-tree", "-z", "-l", "--full-tree"}
	if recursive {
		args = append(args, "-r", "-t")
	}
	b, _, err := g.run(nil, nil, append(args, treeish)...)
	if err != nil {
		return nil, errNoObject
	}
	var entries []treeEntry
	for _, rec := range strings.Split(string(b), "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 4 {
			continue
		}
		size, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			size = -1
		}
		entries = append(entries, treeEntry{Mode: f[0], Type: f[1], SHA: f[2], Size: size, Path: path})
	}
	return entries, nil
}

// mkTree writes one tree level from entries whose Path is a plain name.
func (g *gitRepo) mkTree(entries []treeEntry) (string, error) {
	var in bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&in, "%s %s %s\t%s\x00", e.Mode, e.Type, e.SHA, e.Path)
	}
	return g.out(in.Bytes(), nil, "mktree", "-z")
}

// mergeTrees computes the tree of merging b into a, as GitHub's merge check
// does; clean is false when the merge has conflicts.
func (g *gitRepo) mergeTrees(a, b string) (tree string, clean bool, err error) {
	out, code, err := g.run(
		nil,
		nil,
		"merge-tree",
		"--write-tree",
		"--no-messages",
		"--name-only",
		"--allow-unrelated-histories",
		a,
		b,
	)
	switch code {
	case 0:
		return strings.Fields(string(out))[0], true, nil
	case 1:
		return "", false, nil
	default:
		return "", false, err
	}
}

func (g *gitRepo) mergeBase(a, b string) (string, error) {
	out, code, err := g.run(nil, nil, "merge-base", a, b)
	if code == 1 {
		return "", nil // unrelated histories
	}
	return strings.TrimSpace(string(out)), err
}

// isAncestor reports whether a is an ancestor of (or equal to) b.
func (g *gitRepo) isAncestor(a, b string) (bool, error) {
	_, code, err := g.run(nil, nil, "merge-base", "--is-ancestor", a, b)
	switch code {
	case 0:
		return true, nil
	case 1:
		return false, nil
	default:
		return false, err
	}
}

// revList returns the commits in from..to, oldest first.
func (g *gitRepo) revList(from, to string) ([]string, error) {
	rng := to
	if from != "" {
		rng = from + ".." + to
	}
	out, err := g.out(nil, nil, "rev-list", "--reverse", "--topo-order", rng)
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Split(out, "\n"), nil
}

// person is a commit author or committer.
type person struct {
	Name  string
	Email string
	When  time.Time
}

// String formats the person as a commit header does: name <email> seconds zone.
func (p person) String() string {
	_, off := p.When.Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("%s <%s> %d %c%02d%02d", p.Name, p.Email, p.When.Unix(), sign, off/3600, off%3600/60)
}

func parsePerson(s string) person {
	p := person{}
	lt, gt := strings.Index(s, "<"), strings.LastIndex(s, ">")
	if lt < 0 || gt < lt {
		return p
	}
	p.Name = strings.TrimSpace(s[:lt])
	p.Email = s[lt+1 : gt]
	f := strings.Fields(s[gt+1:])
	if len(f) == 2 {
		sec, _ := strconv.ParseInt(f[0], 10, 64)
		loc := time.UTC
		if tz, err := time.Parse("-0700", f[1]); err == nil {
			loc = tz.Location()
		}
		p.When = time.Unix(sec, 0).In(loc)
	}
	return p
}

// commitObject is a parsed git commit.
type commitObject struct {
	SHA       string
	Tree      string
	Parents   []string
	Author    person
	Committer person
	Signature string
	Message   string
}

func (g *gitRepo) readCommit(sha string) (*commitObject, error) {
	b, err := g.catFile("commit", sha)
	if err != nil {
		return nil, err
	}
	c := &commitObject{SHA: sha}
	head, msg, _ := strings.Cut(string(b), "\n\n")
	c.Message = msg
	var inSig bool
	for _, line := range strings.Split(head, "\n") {
		if inSig && strings.HasPrefix(line, " ") {
			c.Signature += "\n" + line[1:]
			continue
		}
		inSig = false
		key, val, _ := strings.Cut(line, " ")
		switch key {
		case "tree":
			c.Tree = val
		case "parent":
			c.Parents = append(c.Parents, val)
		case "author":
			c.Author = parsePerson(val)
		case "committer":
			c.Committer = parsePerson(val)
		case "gpgsig":
			c.Signature, inSig = val, true
		}
	}
	return c, nil
}

// writeCommit stores a commit object built from c and returns its SHA.
func (g *gitRepo) writeCommit(c *commitObject) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "tree %s\n", c.Tree)
	for _, p := range c.Parents {
		fmt.Fprintf(&b, "parent %s\n", p)
	}
	fmt.Fprintf(&b, "author %s\ncommitter %s\n", c.Author, c.Committer)
	if c.Signature != "" {
		b.WriteString("gpgsig " + strings.ReplaceAll(strings.TrimRight(c.Signature, "\n"), "\n", "\n ") + "\n")
	}
	b.WriteString("\n" + c.Message)
	return g.hashObject("commit", []byte(b.String()))
}

// rebase replays the commits of from..head onto onto in a throw-away
// worktree (git 2.39 has no merge-tree --merge-base), returning the new tip;
// ok is false when a commit does not apply cleanly.
func (g *gitRepo) rebase(onto, from, head string, committer person) (tip string, ok bool, err error) {
	commits, err := g.revList(from, head)
	if err != nil {
		return "", false, err
	}
	wt, err := os.MkdirTemp("", "localhub-rebase-")
	if err != nil {
		return "", false, fmt.Errorf("rebasing: %w", err)
	}
	defer os.RemoveAll(wt)
	wtPath := filepath.Join(wt, "w")
	if _, err := g.out(nil, nil, "worktree", "add", "--quiet", "--detach", wtPath, onto); err != nil {
		return "", false, err
	}
	defer g.run(nil, nil, "worktree", "remove", "--force", wtPath) //nolint:errcheck // best effort cleanup of a temp dir
	env := []string{
		"GIT_COMMITTER_NAME=" + committer.Name,
		"GIT_COMMITTER_EMAIL=" + committer.Email,
		"GIT_COMMITTER_DATE=" + committer.When.Format(time.RFC3339),
	}
	for _, c := range commits {
		cmd := exec.Command("git", "-C", wtPath, "cherry-pick", "--allow-empty", "--keep-redundant-commits", c)
		cmd.Env = gitEnv(env...)
		if err := cmd.Run(); err != nil {
			return "", false, nil // a conflict: GitHub answers "cannot be rebased"
		}
	}
	cmd := exec.Command("git", "-C", wtPath, "rev-parse", "HEAD")
	cmd.Env = gitEnv()
	out, err := cmd.Output()
	if err != nil {
		return "", false, fmt.Errorf("rebasing: %w", err)
	}
	return strings.TrimSpace(string(out)), true, nil
}

// importDir commits the files of dir (everything but .git) as the single
// commit of branch, returning its SHA.
func (g *gitRepo) importDir(dir, branch string, who person, message string) (string, error) {
	idx, err := os.CreateTemp("", "localhub-index-")
	if err != nil {
		return "", fmt.Errorf("importing %s: %w", dir, err)
	}
	idx.Close()
	os.Remove(idx.Name())
	defer os.Remove(idx.Name())
	env := []string{"GIT_INDEX_FILE=" + idx.Name(), "GIT_WORK_TREE=" + dir}
	add := exec.Command("git", "--git-dir", g.dir, "add", "--all", "--force", ".")
	add.Dir, add.Env = dir, gitEnv(env...)
	if out, err := add.CombinedOutput(); err != nil {
		return "", fmt.Errorf("importing %s: %s: %w", dir, strings.TrimSpace(string(out)), err)
	}
	tree, err := g.out(nil, env, "write-tree")
	if err != nil {
		return "", fmt.Errorf("importing %s: %w", dir, err)
	}
	sha, err := g.writeCommit(&commitObject{Tree: tree, Author: who, Committer: who, Message: message})
	if err != nil {
		return "", err
	}
	return sha, g.updateRef("refs/heads/"+branch, sha, "")
}

func isSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

// emptyTree is git's well-known empty tree, the "parent" of a root commit.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// diffFiles describes from..to as GitHub's file list (status, line counts,
// patch) and the totals.
func (g *gitRepo) diffFiles(from, to string) ([]map[string]any, map[string]any, error) {
	ns, err := g.out(nil, nil, "diff", "--no-renames", "-z", "--name-status", from, to)
	if err != nil {
		return nil, nil, err
	}
	num, err := g.out(nil, nil, "diff", "--no-renames", "-z", "--numstat", from, to)
	if err != nil {
		return nil, nil, err
	}
	patch, err := g.out(nil, nil, "diff", "--no-renames", "--no-color", from, to)
	if err != nil {
		return nil, nil, err
	}
	type counts struct{ add, del int }
	lines := map[string]counts{}
	for _, rec := range strings.Split(num, "\x00") {
		f := strings.SplitN(rec, "\t", 3)
		if len(f) == 3 {
			a, _ := strconv.Atoi(f[0])
			d, _ := strconv.Atoi(f[1])
			lines[f[2]] = counts{a, d}
		}
	}
	patches := map[string]string{}
	for _, sec := range strings.Split("\n"+patch, "\ndiff --git ")[1:] {
		header, body, _ := strings.Cut(sec, "\n@@")
		name := ""
		for _, l := range strings.Split(header, "\n") {
			if p, ok := strings.CutPrefix(l, "+++ b/"); ok {
				name = p
			} else if p, ok := strings.CutPrefix(l, "--- a/"); ok && name == "" {
				name = p
			}
		}
		if name != "" && body != "" {
			patches[name] = "@@" + body
		}
	}
	statusNames := map[string]string{"A": "added", "M": "modified", "D": "removed", "T": "changed"}
	var files []map[string]any
	add, del := 0, 0
	parts := strings.Split(ns, "\x00")
	for i := 0; i+1 < len(parts); i += 2 {
		st, name := parts[i], parts[i+1]
		n := lines[name]
		add, del = add+n.add, del+n.del
		blob := ""
		if st != "D" {
			blob, _ = g.out(nil, nil, "rev-parse", to+":"+name)
		}
		f := map[string]any{"filename": name, "status": statusNames[st], "additions": n.add, "deletions": n.del,
			"changes": n.add + n.del, "sha": blob}
		if p, ok := patches[name]; ok {
			f["patch"] = p
		}
		files = append(files, f)
	}
	if files == nil {
		files = []map[string]any{}
	}
	return files, map[string]any{"additions": add, "deletions": del, "total": add + del}, nil
}

// buildTree writes the nested trees for a flat map of full paths to entries
// and returns the root tree's SHA.
func (g *gitRepo) buildTree(files map[string]treeEntry) (string, error) {
	type dir struct {
		entries []treeEntry
		subdirs map[string]*dir
	}
	root := &dir{subdirs: map[string]*dir{}}
	for p, e := range files {
		parts := strings.Split(p, "/")
		d := root
		for _, part := range parts[:len(parts)-1] {
			sub, ok := d.subdirs[part]
			if !ok {
				sub = &dir{subdirs: map[string]*dir{}}
				d.subdirs[part] = sub
			}
			d = sub
		}
		e.Path = parts[len(parts)-1]
		d.entries = append(d.entries, e)
	}
	var write func(d *dir) (string, error)
	write = func(d *dir) (string, error) {
		entries := d.entries
		for name, sub := range d.subdirs {
			sha, err := write(sub)
			if err != nil {
				return "", err
			}
			entries = append(entries, treeEntry{Mode: "040000", Type: "tree", SHA: sha, Path: name})
		}
		return g.mkTree(entries)
	}
	return write(root)
}
