package localhub

import (
	"net/url"
	"strings"
)

// authKind says which credential a route accepts, as GitHub splits them.
type authKind int

const (
	authToken authKind = iota // an installation access token
	authJWT                   // the App's own JWT
)

// route is one endpoint. Patterns are GitHub's route templates, where
// {name} matches one path segment and {name...} one or more, so a ref with
// slashes (commits/{ref...}/status) still matches before a literal tail.
type route struct {
	method   string
	template string
	segs     []string
	auth     authKind
	resource string // the rate-limit resource: core or graphql
	handle   func(*call)
}

func newRoute(method, template string, auth authKind, h func(*call)) *route {
	res := "core"
	if strings.HasSuffix(template, "/graphql") {
		res = "graphql"
	}
	return &route{
		method:   method,
		template: template,
		segs:     strings.Split(strings.Trim(template, "/"), "/"),
		auth:     auth,
		resource: res,
		handle:   h,
	}
}

// match reports whether the escaped path segments fit the route, and the
// unescaped values of its wildcards.
func (rt *route) match(segs []string) (map[string]string, bool) {
	params := map[string]string{}
	if !matchSegs(rt.segs, segs, params) {
		return nil, false
	}
	return params, true
}

func matchSegs(pat, segs []string, params map[string]string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	p := pat[0]
	if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "...}") {
		name := p[1 : len(p)-4]
		// Greedy from the longest, so the literal tail after the wildcard
		// decides where the wildcard ends.
		for n := len(segs) - len(pat) + 1; n >= 1; n-- {
			if matchSegs(pat[1:], segs[n:], params) {
				vals := make([]string, n)
				for i, s := range segs[:n] {
					vals[i] = unescape(s)
				}
				params[name] = strings.Join(vals, "/")
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
		if segs[0] == "" {
			return false
		}
		params[p[1:len(p)-1]] = unescape(segs[0])
		return matchSegs(pat[1:], segs[1:], params)
	}
	if p != segs[0] {
		return false
	}
	return matchSegs(pat[1:], segs[1:], params)
}

func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}
