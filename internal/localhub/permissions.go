package localhub

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
)

// DefaultPermissions are the App's permissions when Options.Permissions is
// nil: the ones config/github-app-manifest.json asks for.
var DefaultPermissions = map[string]string{
	"contents": "write", "pull_requests": "write", "checks": "write", "issues": "write", "metadata": "read",
}

// permission is what a route needs of an installation token: a permission
// name and a level (read or write); empty name needs none.
type permission struct{ name, level string }

// routePermission is the permission GitHub's REST description lists for an
// endpoint the hub serves (the fine-grained permission of each operation).
func routePermission(method, template string) permission {
	const repo = "/repos/{owner}/{repo}"
	level := "read"
	if method != http.MethodGet && method != http.MethodHead {
		level = "write"
	}
	rest, inRepo := strings.CutPrefix(template, repo)
	switch {
	case template == "/rate_limit":
		return permission{}
	case template == "/installation/repositories":
		return permission{"metadata", "read"}
	case template == "/graphql":
		// enablePullRequestAutoMerge and disablePullRequestAutoMerge.
		return permission{"pull_requests", "write"}
	case strings.HasPrefix(template, "/raw/"):
		return permission{"contents", "read"}
	case !inRepo:
		return permission{}
	case rest == "":
		return permission{"metadata", "read"}
	case strings.HasSuffix(rest, "/protection"):
		return permission{"administration", level}
	case strings.HasPrefix(rest, "/commits/") && strings.HasSuffix(rest, "/pulls"):
		return permission{"pull_requests", "read"}
	case strings.HasSuffix(rest, "/check-runs") && method == http.MethodGet, strings.HasPrefix(rest, "/check-runs"):
		return permission{"checks", level}
	case strings.HasSuffix(rest, "/statuses") || strings.HasSuffix(rest, "/status") ||
		strings.HasPrefix(rest, "/statuses/"):
		return permission{"statuses", level}
	case strings.HasPrefix(rest, "/pulls"):
		return permission{"pull_requests", level}
	case strings.HasPrefix(rest, "/issues"), strings.HasPrefix(rest, "/labels"):
		return permission{"issues", level}
	case strings.HasPrefix(rest, "/contents"), strings.HasPrefix(rest, "/git/"), strings.HasPrefix(rest, "/commits"),
		strings.HasPrefix(rest, "/compare"), strings.HasPrefix(rest, "/branches"):
		return permission{"contents", level}
	}
	return permission{"metadata", "read"}
}

// grants reports whether a permission level covers the level asked for.
func grants(have, want string) bool {
	switch want {
	case "read":
		return have == "read" || have == "write" || have == "admin"
	case "write":
		return have == "write" || have == "admin"
	}
	return false
}

// permits checks an installation token against the route, writing GitHub's
// 403 when the App lacks the permission. Caller holds h.mu.
func (h *Hub) permits(c *call, rt *route) bool {
	need := routePermission(rt.method, rt.template)
	if need.name == "" || grants(h.perms[need.name], need.level) {
		return true
	}
	c.fail(http.StatusForbidden, "Resource not accessible by integration")
	return false
}

// permissionsObj renders the App's permissions.
func (h *Hub) permissionsObj() obj {
	out := obj{}
	for k, v := range h.perms {
		out[k] = v
	}
	return out
}

// suspendedMessage is GitHub's answer for a suspended installation.
const suspendedMessage = "This installation has been suspended"

// Suspend suspends (or, with false, unsuspends) an installation: its
// tokens and its repositories answer 403, as on GitHub; other
// installations are unaffected.
func (h *Hub) Suspend(installationID int64, suspended bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, inst := range h.st.Installations {
		if inst.ID != installationID {
			continue
		}
		if suspended {
			now := h.now()
			inst.SuspendedAt = &now
		} else {
			inst.SuspendedAt = nil
		}
		return h.persist()
	}
	return fmt.Errorf("installation %d: not found", installationID)
}

func clonePermissions(p map[string]string) map[string]string {
	if p == nil {
		p = DefaultPermissions
	}
	return maps.Clone(p)
}
