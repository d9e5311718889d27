package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// This file reads Kubernetes audit events (audit.k8s.io/v1): JSON lines as
// the log backend writes them, and EventList bodies as the webhook backend
// posts them. Only successful writes are kept, with who made them and, at
// the Request level, which fields the request body set.

// IntentAnnotation is the annotation a person may set, in the same change,
// to say why they changed an object live.
const IntentAnnotation = "backflow.dev/intent"

// auditAPIVersion is the only audit event version read.
const auditAPIVersion = "audit.k8s.io/v1"

// AuditEvent is one successful write recorded by the Kubernetes API server's
// audit log.
type AuditEvent struct {
	// AuditID is the server's id of the request; the log file and the
	// webhook deliver the same event with the same id.
	AuditID string
	// Time is when the server received the request.
	Time time.Time
	// Verb is create, update or patch.
	Verb string
	// User is the authenticated user the write was authorized as (the
	// impersonated user when there was one).
	User string
	// Groups are that user's groups.
	Groups []string
	// ImpersonatedBy is the authenticated user who impersonated User, if any.
	ImpersonatedBy string
	// Manager is the field manager the write was recorded under in
	// managedFields: the fieldManager query parameter, else the user agent
	// up to its first "/", as the API server derives it.
	Manager string
	// Object is what was written.
	Object AuditObject
	// HasBody says the event carried the request body (Request level or
	// higher), so Sets is known.
	HasBody bool
	// Sets are the field paths the request body set, in Helm's --set
	// syntax; a path covers everything below it. A list item whose index
	// the body does not say is written [*] (a strategic merge patch names
	// items by their merge key).
	Sets []string
	// Intent is the backflow.dev/intent annotation the request set, valid
	// when HasIntent.
	Intent    string
	HasIntent bool
	// Origin is where the event was read (file:line, webhook).
	Origin string

	sets [][]yamlnode.Segment
	// body is the decoded request body (numbers as json.Number), nil
	// without one: what the write set, for the join's value check.
	body any
}

// AuditObject is the object reference of an audit event.
type AuditObject struct {
	Group       string
	Version     string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
}

// Key is the object's key with its kind left empty: an audit event names
// the resource (deployments), not the kind (Deployment).
func (o AuditObject) Key() ObjectKey {
	gv := o.Version
	if o.Group != "" {
		gv = o.Group + "/" + o.Version
	}
	return ObjectKey{APIVersion: gv, Namespace: o.Namespace, Name: o.Name}
}

// AuditName is what an audit event and an object key have in common: the
// object's API group, namespace and name. An audit event names the resource
// (deployments), not the kind, so the join takes any resource of the group
// by that name. It is comparable, for the audit and admission logs' indexes.
type AuditName struct {
	Group, Namespace, Name string
}

// AuditName is o's group, namespace and name.
func (o AuditObject) AuditName() AuditName {
	return AuditName{Group: o.Group, Namespace: o.Namespace, Name: o.Name}
}

// AuditName is k's group (its apiVersion without the version), namespace
// and name: what an audit event that wrote k names.
func (k ObjectKey) AuditName() AuditName {
	group, _ := SplitAPIVersion(k.APIVersion)
	return AuditName{Group: group, Namespace: k.Namespace, Name: k.Name}
}

// String is group/version/resource[/subresource] namespace/name.
func (o AuditObject) String() string {
	gv := o.Version
	if o.Group != "" {
		gv = o.Group + "/" + o.Version
	}
	s := gv + "/" + o.Resource
	if o.Subresource != "" {
		s += "/" + o.Subresource
	}
	if o.Namespace != "" {
		return s + " " + o.Namespace + "/" + o.Name
	}
	return s + " " + o.Name
}

// rawAuditEvent is the part of audit.k8s.io/v1 Event that is read.
type rawAuditEvent struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Level      string `json:"level"`
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"impersonatedUser"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		APIVersion  string `json:"apiVersion"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject            json.RawMessage `json:"requestObject"`
	RequestReceivedTimestamp time.Time       `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time       `json:"stageTimestamp"`
}

// rawEventList is audit.k8s.io/v1 EventList, the webhook backend's body.
type rawEventList struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

// AuditResult is what an audit input yielded.
type AuditResult struct {
	// Events are the successful writes, in input order.
	Events []AuditEvent
	// Skipped counts events read and deliberately not kept: reads,
	// failed requests, stages other than ResponseComplete.
	Skipped int
	// Errors name each line or item that could not be read.
	Errors []error
}

// ParseAuditEvents reads audit events from data: JSON lines of Event (the
// log backend), an EventList (the webhook backend), or a single Event. name
// names the input in messages and in each event's Origin.
func ParseAuditEvents(data []byte, name string) AuditResult {
	var res AuditResult
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return res
	}
	var head struct {
		Kind string `json:"kind"`
	}
	// An EventList is one JSON value spanning lines; try it first.
	if json.Unmarshal(trimmed, &head) == nil && head.Kind == "EventList" {
		var list rawEventList
		if err := json.Unmarshal(trimmed, &list); err != nil {
			res.Errors = append(res.Errors, fmt.Errorf("%s: EventList: %w", name, err))
			return res
		}
		if list.APIVersion != auditAPIVersion {
			res.Errors = append(
				res.Errors,
				fmt.Errorf("%s: EventList apiVersion %q: want %s", name, list.APIVersion, auditAPIVersion),
			)
			return res
		}
		for i, item := range list.Items {
			// Items of a list carry no kind and apiVersion of their own.
			res.add(item, fmt.Sprintf("%s: items[%d]", name, i), true)
		}
		return res
	}
	line := 0
	for len(data) > 0 {
		line++
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		res.add(l, fmt.Sprintf("%s:%d", name, line), false)
	}
	return res
}

func (r *AuditResult) add(raw []byte, origin string, listItem bool) {
	ev, keep, err := decodeAuditEvent(raw, origin, listItem)
	switch {
	case err != nil:
		r.Errors = append(r.Errors, fmt.Errorf("%s: %w", origin, err))
	case keep:
		r.Events = append(r.Events, ev)
	default:
		r.Skipped++
	}
}

// writeVerbs are the verbs that change an object.
var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true}

// decodeAuditEvent reads one Event; keep is false for events that are not
// successful writes of a named object. An item of an EventList may leave
// its kind and apiVersion to the list.
func decodeAuditEvent(data []byte, origin string, listItem bool) (AuditEvent, bool, error) {
	var raw rawAuditEvent
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return AuditEvent{}, false, fmt.Errorf("audit event: %w", err)
	}
	if listItem && raw.Kind == "" && raw.APIVersion == "" {
		raw.Kind, raw.APIVersion = "Event", auditAPIVersion
	}
	if raw.Kind != "Event" || raw.APIVersion != auditAPIVersion {
		return AuditEvent{}, false, fmt.Errorf(
			"audit event: kind %q apiVersion %q: want Event %s",
			raw.Kind,
			raw.APIVersion,
			auditAPIVersion,
		)
	}
	// Only the ResponseComplete stage says the write succeeded; the other
	// stages of the same request carry no response status.
	if raw.Stage != "ResponseComplete" || !writeVerbs[raw.Verb] || raw.ObjectRef == nil || raw.ResponseStatus == nil {
		return AuditEvent{}, false, nil
	}
	if raw.ResponseStatus.Code < 200 || raw.ResponseStatus.Code > 299 {
		return AuditEvent{}, false, nil
	}
	ref := raw.ObjectRef
	if ref.Name == "" || ref.Resource == "" {
		// A create names its object only in the body; without a name the
		// event cannot be joined to an observation.
		if raw.Verb != "create" {
			return AuditEvent{}, false, nil
		}
		ref.Name = nameFromBody(raw.RequestObject)
		if ref.Name == "" {
			return AuditEvent{}, false, nil
		}
	}
	if raw.User.Username == "" {
		return AuditEvent{}, false, errors.New("audit event: user.username is empty")
	}
	ev := AuditEvent{
		AuditID: raw.AuditID,
		Time:    raw.RequestReceivedTimestamp,
		Verb:    raw.Verb,
		User:    raw.User.Username,
		Groups:  append([]string(nil), raw.User.Groups...),
		Manager: fieldManager(raw.RequestURI, raw.UserAgent),
		Object: AuditObject{
			Group: ref.APIGroup, Version: ref.APIVersion, Resource: ref.Resource, Subresource: ref.Subresource,
			Namespace: ref.Namespace, Name: ref.Name,
		},
		Origin: origin,
	}
	if ev.Time.IsZero() {
		ev.Time = raw.StageTimestamp
	}
	if iu := raw.ImpersonatedUser; iu != nil && iu.Username != "" {
		ev.ImpersonatedBy = ev.User
		ev.User, ev.Groups = iu.Username, append([]string(nil), iu.Groups...)
	}
	if len(raw.RequestObject) > 0 && !bytes.Equal(bytes.TrimSpace(raw.RequestObject), []byte("null")) {
		body, sets, intent, hasIntent, err := requestSets(raw.Verb, ref.Subresource, raw.RequestObject)
		if err != nil {
			return AuditEvent{}, false, fmt.Errorf("audit event %s: requestObject: %w", raw.AuditID, err)
		}
		ev.HasBody, ev.sets, ev.Intent, ev.HasIntent, ev.body = true, sets, intent, hasIntent, body
		for _, s := range sets {
			ev.Sets = append(ev.Sets, formatSegs(s))
		}
		sort.Strings(ev.Sets)
	}
	return ev, true, nil
}

func nameFromBody(body json.RawMessage) string {
	var obj struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if json.Unmarshal(body, &obj) != nil {
		return ""
	}
	return obj.Metadata.Name
}

// fieldManager is the manager the API server records a write under: the
// fieldManager query parameter, else the user agent's prefix up to the
// first "/" (at most 128 bytes), as the server's own default.
func fieldManager(requestURI, userAgent string) string {
	if u, err := url.ParseRequestURI(requestURI); err == nil {
		if m := u.Query().Get("fieldManager"); m != "" {
			return m
		}
	}
	m, _, _ := strings.Cut(userAgent, "/")
	if len(m) > 128 {
		m = m[:128]
	}
	return m
}

// formatSegs writes the path a write set, "(whole object)" for the empty one.
func formatSegs(segs []yamlnode.Segment) string {
	if len(segs) == 0 {
		return "(whole object)"
	}
	return yamlnode.FormatPath(segs)
}

// maxSetPaths bounds the paths derived from one request body.
const maxSetPaths = 10_000

// requestSets derives the field paths a write's body set. A create or a
// full update sets the whole object (the empty path); a patch sets what it
// names. The scale subresource's Scale.spec.replicas is the object's
// spec.replicas; the status subresource sets only status.
func requestSets(verb, subresource string, body json.RawMessage) (any, [][]yamlnode.Segment, string, bool, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, nil, "", false, err
	}
	d := &deriver{}
	switch {
	case verb == "patch":
		if ops, ok := v.([]any); ok {
			if err := d.jsonPatch(ops); err != nil {
				return nil, nil, "", false, err
			}
		} else if m, ok := v.(map[string]any); ok {
			d.merge(nil, m)
		} else {
			return nil, nil, "", false, errors.New("a patch must be a JSON object or a JSON patch array")
		}
	default:
		if _, ok := v.(map[string]any); !ok {
			return nil, nil, "", false, errors.New("want a JSON object")
		}
		d.add(nil)
		d.fullObject(v)
	}
	if len(d.paths) > maxSetPaths {
		return nil, nil, "", false, fmt.Errorf("more than %d field paths", maxSetPaths)
	}
	switch subresource {
	case "":
	case "scale":
		return v, scaleSets(d.paths), "", false, nil
	case "status":
		return v, underStatus(d.paths), "", false, nil
	default:
		// Other subresources (eviction, binding, ...) do not write the
		// object's fields as such.
		return nil, nil, "", false, nil
	}
	return v, d.paths, d.intent, d.hasIntent, nil
}

// scaleSets maps a Scale body's paths to the scaled object: only
// spec.replicas reaches it.
func scaleSets(paths [][]yamlnode.Segment) [][]yamlnode.Segment {
	replicas := []yamlnode.Segment{{Key: "spec"}, {Key: "replicas"}}
	for _, p := range paths {
		if covers(p, replicas) {
			return [][]yamlnode.Segment{replicas}
		}
	}
	return nil
}

func underStatus(paths [][]yamlnode.Segment) [][]yamlnode.Segment {
	status := []yamlnode.Segment{{Key: "status"}}
	var out [][]yamlnode.Segment
	for _, p := range paths {
		switch {
		case covers(status, p):
			out = append(out, p)
		case covers(p, status):
			out = append(out, status)
		}
	}
	return out
}

// covers reports whether setting prefix sets everything at and below p.
func covers(prefix, p []yamlnode.Segment) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i := range prefix {
		if !segMatches(prefix[i], p[i]) {
			return false
		}
	}
	return true
}

func segMatches(a, b yamlnode.Segment) bool {
	switch {
	case a.AnyIndex || b.AnyIndex:
		return (a.AnyIndex || a.IsIndex) && (b.AnyIndex || b.IsIndex)
	case a.IsIndex && b.IsIndex:
		return a.Index == b.Index
	case a.IsIndex || b.IsIndex:
		// A JSON pointer's numeric token may be a mapping key.
		return a.Key != "" && a.Key == b.Key
	}
	return a.Key == b.Key
}

// deriver collects the paths a body sets, and the intent annotation.
type deriver struct {
	paths     [][]yamlnode.Segment
	intent    string
	hasIntent bool
}

func (d *deriver) add(p []yamlnode.Segment) {
	if len(d.paths) > maxSetPaths {
		return
	}
	d.paths = append(d.paths, append([]yamlnode.Segment(nil), p...))
}

// fullObject only looks for the intent annotation: the whole object is set.
func (d *deriver) fullObject(v any) {
	m, _ := v.(map[string]any)
	md, _ := m["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if s, ok := ann[IntentAnnotation].(string); ok {
		d.intent, d.hasIntent = s, true
	}
}

// mergeKeys are the keys by which a strategic merge patch names list items
// in the built-in kinds (containers, ports, volumes, env, ...). A list of
// mappings that all carry one of them is read item by item.
var mergeKeys = []string{"name", "containerPort", "mountPath", "devicePath", "ip", "type", "topologyKey"}

// merge reads a JSON merge patch or a strategic merge patch: every leaf
// (including null, which removes) is a path the patch sets; directives
// ($patch, $setElementOrder/..., $retainKeys, ...) are skipped.
func (d *deriver) merge(prefix []yamlnode.Segment, m map[string]any) {
	if len(m) == 0 {
		d.add(prefix)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	wrote := false
	for _, k := range keys {
		if strings.HasPrefix(k, "$") {
			continue
		}
		wrote = true
		p := append(append([]yamlnode.Segment(nil), prefix...), yamlnode.Segment{Key: k})
		d.value(p, m[k])
	}
	if !wrote {
		// Only directives (an item's "$patch: delete", say): the item
		// itself is what changed.
		d.add(prefix)
	}
	if len(prefix) == 2 && prefix[0].Key == "metadata" && prefix[1].Key == "annotations" {
		if s, ok := m[IntentAnnotation].(string); ok {
			d.intent, d.hasIntent = s, true
		}
	}
}

func (d *deriver) value(p []yamlnode.Segment, v any) {
	switch x := v.(type) {
	case map[string]any:
		d.merge(p, x)
	case []any:
		key := listMergeKey(x)
		if key == "" {
			d.add(p)
			return
		}
		for _, item := range x {
			im := item.(map[string]any)
			seg := yamlnode.Segment{AnyIndex: true, MergeKey: key, MergeValue: fmt.Sprint(im[key])}
			d.merge(append(append([]yamlnode.Segment(nil), p...), seg), im)
		}
	default:
		d.add(p)
	}
}

// listMergeKey is the merge key every item of a list of mappings carries,
// or "" when the list is set as a whole.
func listMergeKey(items []any) string {
	if len(items) == 0 {
		return ""
	}
	for _, k := range mergeKeys {
		all := true
		for _, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				return ""
			}
			if _, has := m[k]; !has {
				all = false
				break
			}
		}
		if all {
			return k
		}
	}
	return ""
}

// jsonPatch reads an RFC 6902 JSON patch: add, replace, remove, move and
// copy set their path (move also removes from); test sets nothing.
func (d *deriver) jsonPatch(ops []any) error {
	for i, op := range ops {
		m, ok := op.(map[string]any)
		if !ok {
			return fmt.Errorf("JSON patch operation %d: want an object", i)
		}
		name, _ := m["op"].(string)
		ptr, _ := m["path"].(string)
		var targets []string
		switch name {
		case "add", "replace", "remove", "copy":
			targets = []string{ptr}
		case "move":
			from, _ := m["from"].(string)
			targets = []string{ptr, from}
		case "test":
			continue
		default:
			return fmt.Errorf("JSON patch operation %d: unknown op %q", i, name)
		}
		for _, t := range targets {
			p, err := pointerSegs(t)
			if err != nil {
				return fmt.Errorf("JSON patch operation %d: %w", i, err)
			}
			d.add(p)
			if name != "remove" && len(p) == 3 && p[0].Key == "metadata" && p[1].Key == "annotations" &&
				p[2].Key == IntentAnnotation {
				if s, ok := m["value"].(string); ok {
					d.intent, d.hasIntent = s, true
				}
			}
			if name != "remove" && len(p) == 2 && p[0].Key == "metadata" && p[1].Key == "annotations" {
				if ann, ok := m["value"].(map[string]any); ok {
					if s, ok := ann[IntentAnnotation].(string); ok {
						d.intent, d.hasIntent = s, true
					}
				}
			}
		}
	}
	return nil
}

// pointerSegs reads a JSON pointer (RFC 6901). Numeric tokens are list
// indexes when the patch means a list; a pointer cannot say, so a numeric
// token matches both an index and a key of that name. "-" (the end of a
// list) is an item of unknown index.
func pointerSegs(ptr string) ([]yamlnode.Segment, error) {
	if ptr == "" {
		return nil, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("JSON pointer %q: must start with /", ptr)
	}
	var out []yamlnode.Segment
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n, err := strconv.Atoi(tok); {
		case tok == "-":
			out = append(out, yamlnode.Segment{AnyIndex: true})
		case err == nil && n >= 0 && tok == strconv.Itoa(n):
			out = append(out, yamlnode.Segment{IsIndex: true, Index: n, Key: tok})
		default:
			out = append(out, yamlnode.Segment{Key: tok})
		}
	}
	return out, nil
}

// fieldSegs reads an observation's field path into segments.
func fieldSegs(path string) ([]yamlnode.Segment, error) {
	segs, err := yamlnode.ParsePath(path)
	if err != nil {
		return nil, err
	}
	out := make([]yamlnode.Segment, len(segs))
	for i, s := range segs {
		if s.IsIndex {
			out[i] = yamlnode.Segment{IsIndex: true, Index: s.Index}
		} else {
			out[i] = yamlnode.Segment{Key: s.Key}
		}
	}
	return out, nil
}
