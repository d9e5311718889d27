package localhub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode"
)

// The hub's GraphQL covers the auto-merge mutations GitHub offers only over
// GraphQL. Errors come back with HTTP 200 in "errors", as GitHub does.

type gqlError struct {
	Type    string   `json:"type,omitempty"`
	Path    []string `json:"path,omitempty"`
	Message string   `json:"message"`
}

func (h *Hub) graphql(c *call) {
	var req struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if !c.decode(&req) {
		return
	}
	if strings.TrimSpace(req.Query) == "" {
		c.json(
			http.StatusOK,
			obj{"errors": []gqlError{{Message: "A query attribute must be specified and must be a string."}}},
		)
		return
	}
	var field string
	for _, f := range []string{"enablePullRequestAutoMerge", "disablePullRequestAutoMerge"} {
		if strings.Contains(req.Query, f) {
			field = f
		}
	}
	if field == "" || !strings.HasPrefix(strings.TrimSpace(req.Query), "mutation") {
		c.json(
			http.StatusOK,
			obj{
				"errors": []gqlError{
					{
						Type:    "undefinedField",
						Message: "This server serves only the enablePullRequestAutoMerge and disablePullRequestAutoMerge mutations",
					},
				},
			},
		)
		return
	}
	input, err := gqlInput(req.Query, field, req.Variables)
	if err != nil {
		c.json(http.StatusOK, obj{"errors": []gqlError{{Type: "argumentLiteralsIncompatible", Message: err.Error()}}})
		return
	}
	data, gerr := h.autoMergeMutation(c, field, input)
	if gerr != nil {
		gerr.Path = []string{field}
		c.json(http.StatusOK, obj{"data": obj{field: nil}, "errors": []gqlError{*gerr}})
		return
	}
	c.json(http.StatusOK, obj{"data": obj{field: data}})
}

func (h *Hub) findPullByNode(c *call, id string) (*repoState, *issue) {
	for _, rs := range h.st.Repos {
		for _, is := range rs.Issues {
			if is.Pull != nil && nodeID("PR", is.ID) == id {
				if !c.canSee(rs) {
					return nil, nil
				}
				return rs, is
			}
		}
	}
	return nil, nil
}

func (h *Hub) autoMergeMutation(c *call, field string, in map[string]any) (obj, *gqlError) {
	str := func(k string) string { s, _ := in[k].(string); return s }
	id := str("pullRequestId")
	rs, is := h.findPullByNode(c, id)
	if is == nil {
		return nil, &gqlError{
			Type:    "NOT_FOUND",
			Message: fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id),
		}
	}
	c.repo, c.git = rs, h.gitFor(rs)
	unprocessable := func(msg string) *gqlError { return &gqlError{Type: "UNPROCESSABLE", Message: "Pull request " + msg} }
	if field == "disablePullRequestAutoMerge" {
		is.Pull.AutoMerge = nil
		return h.gqlPull(c, is, in), nil
	}
	if is.State != "open" {
		return nil, unprocessable("Pull request is closed")
	}
	if !rs.AllowAutoMerge {
		return nil, unprocessable("Auto merge is not allowed for this repository")
	}
	if exp := str("expectedHeadOid"); exp != "" && exp != is.Pull.HeadSHA {
		return nil, unprocessable(fmt.Sprintf("Head ref has moved: expected head OID %s, head is %s", exp, is.Pull.HeadSHA))
	}
	method := strings.ToLower(str("mergeMethod"))
	if method == "" {
		method = "merge"
	}
	allowed := map[string]bool{"merge": rs.AllowMerge, "squash": rs.AllowSquash, "rebase": rs.AllowRebase}
	if ok, known := allowed[method]; !known || !ok {
		return nil, unprocessable("Merge method " + strings.ToUpper(method) + " is not allowed on this repository")
	}
	ms, err := h.mergeability(rs, c.git, is)
	if err != nil {
		c.h.logger.Error("merge check", "err", err)
		return nil, &gqlError{Message: "Something went wrong while executing your query."}
	}
	switch ms.state {
	case "blocked":
	case "draft":
		return nil, unprocessable("Can't enable auto-merge for this pull request.")
	default:
		// GitHub refuses auto-merge on a pull request that could merge now.
		return nil, unprocessable("Pull request is in " + ms.state + " status")
	}
	is.Pull.AutoMerge = &autoMerge{
		EnabledBy: c.actor(),
		Method:    method,
		EnabledAt: h.now(),
		Title:     str("commitHeadline"),
		Message:   str("commitBody"),
	}
	h.pullEvent(rs, c.git, is, "auto_merge_enabled", c.actor(), nil)
	if err := h.persist(); err != nil {
		h.logger.Error("saving hub state", "err", err)
	}
	return h.gqlPull(c, is, in), nil
}

func (h *Hub) gqlPull(c *call, is *issue, in map[string]any) obj {
	var amr any
	if am := is.Pull.AutoMerge; am != nil {
		amr = obj{
			"enabledAt":      ts(am.EnabledAt),
			"mergeMethod":    strings.ToUpper(am.Method),
			"enabledBy":      obj{"login": am.EnabledBy},
			"commitHeadline": am.Title,
			"commitBody":     am.Message,
		}
	}
	return obj{"clientMutationId": in["clientMutationId"], "actor": obj{"login": c.actor()},
		"pullRequest": obj{"id": nodeID("PR", is.ID), "number": is.Number, "state": strings.ToUpper(is.State),
			"headRefOid": is.Pull.HeadSHA, "url": fmt.Sprintf("%s/%s/pull/%d", h.baseURL, c.repo.fullName(), is.Number),
			"autoMergeRequest": amr}}
}

// gqlInput finds the input argument of field: a $variable or an inline object.
func gqlInput(query, field string, vars map[string]any) (map[string]any, error) {
	i := strings.Index(query, field)
	rest := strings.TrimSpace(query[i+len(field):])
	if !strings.HasPrefix(rest, "(") {
		return nil, fmt.Errorf("Field '%s' is missing required arguments: input", field)
	}
	p := &gqlParser{s: rest[1:], vars: vars}
	for {
		p.space()
		name := p.name()
		if name == "" {
			return nil, fmt.Errorf("Field '%s' is missing required arguments: input", field)
		}
		p.space()
		if !p.eat(':') {
			return nil, fmt.Errorf("Parse error on argument %q", name)
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if name == "input" {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("Argument 'input' on Field '%s' has an invalid value", field)
			}
			return m, nil
		}
		p.space()
		p.eat(',')
	}
}

type gqlParser struct {
	s    string
	vars map[string]any
}

func (p *gqlParser) space() {
	p.s = strings.TrimLeftFunc(p.s, func(r rune) bool { return unicode.IsSpace(r) || r == ',' })
}

func (p *gqlParser) eat(r byte) bool {
	if len(p.s) > 0 && p.s[0] == r {
		p.s = p.s[1:]
		return true
	}
	return false
}

func (p *gqlParser) name() string {
	n := 0
	for n < len(p.s) && (p.s[n] == '_' || unicode.IsLetter(rune(p.s[n])) || unicode.IsDigit(rune(p.s[n]))) {
		n++
	}
	out := p.s[:n]
	p.s = p.s[n:]
	return out
}

func (p *gqlParser) value() (any, error) {
	p.space()
	switch {
	case p.eat('$'):
		name := p.name()
		v, ok := p.vars[name]
		if !ok {
			return nil, fmt.Errorf("Variable $%s is used by anonymous mutation but not declared or given", name)
		}
		return v, nil
	case p.eat('{'):
		m := map[string]any{}
		for {
			p.space()
			if p.eat('}') {
				return m, nil
			}
			k := p.name()
			if k == "" {
				return nil, fmt.Errorf("Parse error in input object")
			}
			p.space()
			if !p.eat(':') {
				return nil, fmt.Errorf("Parse error on input field %q", k)
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
	case strings.HasPrefix(p.s, `"`):
		end := 1
		for end < len(p.s) && p.s[end] != '"' {
			if p.s[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(p.s) {
			return nil, fmt.Errorf("Parse error: unterminated string")
		}
		var s string
		if err := json.Unmarshal([]byte(p.s[:end+1]), &s); err != nil {
			return nil, fmt.Errorf("Parse error in string: %w", err)
		}
		p.s = p.s[end+1:]
		return s, nil
	default:
		word := p.name()
		switch word {
		case "":
			return nil, fmt.Errorf("Parse error: unexpected input")
		case "true", "false":
			return word == "true", nil
		case "null":
			return nil, nil
		}
		if n, err := strconv.ParseFloat(word, 64); err == nil {
			return n, nil
		}
		return word, nil // an enum value such as SQUASH
	}
}
