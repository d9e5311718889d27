package localhub

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// protectionRefusal returns GitHub's reason for refusing to move a protected
// branch from old to next ("" deletes), or "" when the update is allowed.
// Merges of pull requests do not come through here: they are the way in.
func (h *Hub) protectionRefusal(rs *repoState, g *gitRepo, ref, old, next string) string {
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok {
		return ""
	}
	prot := rs.Protection[branch]
	if prot == nil {
		return ""
	}
	if next == "" {
		return "Cannot delete this protected branch"
	}
	if old != "" {
		if ff, _ := g.isAncestor(old, next); !ff {
			return "Cannot force-push to this branch"
		}
	}
	for _, name := range prot.RequiredChecks {
		if h.checkState(rs, next, name) != "success" {
			return fmt.Sprintf("Required status check %q is expected.", name)
		}
	}
	return ""
}

// preReceiveHook refuses, for git pushes, what protectionRefusal refuses for
// REST: it reads the rules the hub writes to localhub-protection before each
// push, since a hook cannot ask the hub.
const preReceiveHook = `#!/bin/sh
# Written by the local hub: refuse what GitHub's branch protection refuses.
z=0000000000000000000000000000000000000000
f="${GIT_DIR:-.}/localhub-protection"
status=0
while read old new ref; do
	b=${ref#refs/heads/}
	[ "$b" = "$ref" ] && continue
	grep -qxF "protected $b" "$f" 2>/dev/null || continue
	if [ "$new" = "$z" ]; then
		msg="Cannot delete this protected branch"
	elif [ "$old" != "$z" ] && ! git merge-base --is-ancestor "$old" "$new"; then
		msg="Cannot force-push to this branch"
	elif ! grep -qxF "green $b $new" "$f"; then
		msg="Required status check \"$(grep "^require $b " "$f" | head -n 1 | cut -d' ' -f3-)\" is expected."
	else
		continue
	fi
	echo "error: GH006: Protected branch update failed for $ref." >&2
	echo "error: $msg" >&2
	status=1
done
exit $status
`

// writeProtection installs the pre-receive hook and the rules it reads:
// protected branches, their first required check, and the commits whose
// required checks are all green. Callers hold h.mu.
func (h *Hub) writeProtection(rs *repoState, g *gitRepo) error {
	hook := filepath.Join(g.dir, "hooks", "pre-receive")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		return fmt.Errorf("writing the pre-receive hook: %w", err)
	}
	if err := os.WriteFile(hook, []byte(preReceiveHook), 0o755); err != nil {
		return fmt.Errorf("writing the pre-receive hook: %w", err)
	}
	shas := map[string]bool{}
	for _, cr := range rs.CheckRuns {
		shas[cr.HeadSHA] = true
	}
	for _, st := range rs.Statuses {
		shas[st.SHA] = true
	}
	var lines []string
	for branch, prot := range rs.Protection {
		lines = append(lines, "protected "+branch)
		if len(prot.RequiredChecks) == 0 {
			lines = append(lines, "require "+branch+" ")
		} else {
			lines = append(lines, "require "+branch+" "+prot.RequiredChecks[0])
		}
		for sha := range shas {
			green := true
			for _, name := range prot.RequiredChecks {
				green = green && h.checkState(rs, sha, name) == "success"
			}
			if green {
				lines = append(lines, "green "+branch+" "+sha)
			}
		}
	}
	sort.Strings(lines)
	return os.WriteFile(filepath.Join(g.dir, "localhub-protection"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}
