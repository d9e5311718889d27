package confighub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ToolchainKubernetesYAML is the one toolchain backflow writes back to: a
// stream of rendered Kubernetes manifests.
const ToolchainKubernetesYAML = "Kubernetes/YAML"

// DefaultMaxDataSize is the most configuration data backflow reads from or
// writes to a Unit. The published API states no limit on a Unit's data;
// this is the limit backflow sets itself, the same as for a values file.
const DefaultMaxDataSize = 4 << 20

// maxBody bounds every JSON answer, so a broken server cannot exhaust memory.
const maxBody = 8 << 20

// pageSize is the limit of each page of a list (the API allows up to 1000).
const pageSize = 100

// maxPages bounds a list that keeps answering ConfigHub-Continue.
const maxPages = 1000

// continueHeader carries the token of the next page of a list.
const continueHeader = "ConfigHub-Continue"

// slugPattern is the API's pattern for a Slug: a slug that does not match
// it names nothing, and it is safe to quote in a where expression.
var slugPattern = regexp.MustCompile(`^[A-Za-z0-9]([\-_.A-Za-z0-9]*[A-Za-z0-9])?$`)

// ValidSlug reports whether s can be a Space's or a Unit's slug.
func ValidSlug(s string) bool { return len(s) <= 128 && slugPattern.MatchString(s) }

// Config is how to reach a ConfigHub.
type Config struct {
	// URL is the API's base, e.g. https://hub.confighub.com/api.
	URL string
	// Token is the bearer token; it is sent and never shown.
	Token string
	// HTTP is the client to use (its Timeout bounds each request);
	// http.DefaultClient when nil.
	HTTP *http.Client
	// MaxDataSize bounds a Unit's data; DefaultMaxDataSize when 0.
	MaxDataSize int64
	// UserAgent is sent with each request; "backflow" when empty.
	UserAgent string
}

// Client calls ConfigHub's API. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	token   string
	http    *http.Client
	maxData int64
	agent   string
}

// New checks cfg and returns a client.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	if err != nil {
		return nil, errors.New("confighub URL does not parse")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("confighub URL %q is not an http(s) URL", u.Redacted())
	}
	if u.User != nil {
		return nil, errors.New("confighub URL must not carry credentials: give the token separately")
	}
	if cfg.Token == "" {
		return nil, errors.New("confighub token is empty")
	}
	c := &Client{base: u, token: cfg.Token, http: cfg.HTTP, maxData: cfg.MaxDataSize, agent: cfg.UserAgent}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if c.maxData <= 0 {
		c.maxData = DefaultMaxDataSize
	}
	if c.agent == "" {
		c.agent = "backflow"
	}
	return c, nil
}

// LogValue shows the client in a log line by its URL: never its token.
func (c *Client) LogValue() slog.Value { return slog.StringValue(c.base.String()) }

// String is the client's URL: never its token.
func (c *Client) String() string { return c.base.String() }

// MaxDataSize is the most data the client reads or writes.
func (c *Client) MaxDataSize() int64 { return c.maxData }

// Ref names a Unit by its slugs and its IDs.
type Ref struct {
	SpaceSlug, UnitSlug string
	SpaceID, UnitID     string
}

// String is space/unit.
func (r Ref) String() string { return r.SpaceSlug + "/" + r.UnitSlug }

// Unit is what backflow reads of a Unit (GetUnit's ExtendedUnit).
type Unit struct {
	Ref Ref
	// Toolchain is ToolchainType.
	Toolchain string
	// DataHash is the hex SHA-256 of the data, the data endpoint's ETag.
	DataHash string
	// DataSize is the size of the data in bytes.
	DataSize int64
	// HeadRevisionNum is the head revision's number.
	HeadRevisionNum int64
	// LastReleasedRevisionNum is the last revision applied (0 if none).
	LastReleasedRevisionNum int64
	// LastChangeDescription is the head revision's change description.
	LastChangeDescription string
}

// Data is a Unit's configuration as downloaded.
type Data struct {
	Bytes []byte
	// Hash is the ETag it was served with: the DataHash.
	Hash string
}

// Revision is one revision of a Unit (ExtendedRevision's Revision).
type Revision struct {
	ID          string
	Num         int64
	UserID      string
	Description string
	Source      string
	DataHash    string
	CreatedAt   time.Time
}

// Change is one changed path of a diff (ConfigDiff's PathChange, with its
// resource).
type Change struct {
	// ResourceType is <apiVersion>/<kind>; ResourceName <namespace>/<name>.
	ResourceType, ResourceName string
	// Path is the changed path, dot-separated; "" for a whole resource
	// added or removed.
	Path string
	// Type is Add, Delete, Update, Replace, Reorder or Rename.
	Type string
	// From and To are the values' text on each side.
	From, To string
}

// Write says how to upload data.
type Write struct {
	// IfMatch is the DataHash the new data was made from: the write fails
	// with ErrConflict when the Unit's data is no longer that.
	IfMatch string
	// Description is the revision's change description.
	Description string
	// DryRun asks what the write would do without doing it.
	DryRun bool
}

// Written is what an upload did (or, for a dry run, would do).
type Written struct {
	Unit Unit
	// Changes are the diff's paths, resource by resource, in its order.
	Changes []Change
}

// wire types: the fields of the API's schemas backflow reads.
type (
	wireSpace struct {
		SpaceID string
		Slug    string
	}
	wireExtendedSpace struct {
		Space *wireSpace
	}
	wireUnit struct {
		UnitID                  string
		SpaceID                 string
		Slug                    string
		ToolchainType           string
		DataHash                string
		DataSize                int64
		HeadRevisionNum         int64
		LastReleasedRevisionNum int64
		LastChangeDescription   string
	}
	wireExtendedUnit struct {
		Unit         *wireUnit
		HeadRevision *wireRevision
	}
	wireRevision struct {
		RevisionID  string
		RevisionNum int64
		UserID      string
		Description string
		Source      string
		DataHash    string
		CreatedAt   time.Time
	}
	wireExtendedRevision struct {
		Revision *wireRevision
	}
	wirePathChange struct {
		ChangeType string
		Path       string
		FromValue  string
		ToValue    string
	}
	wireResourceDiff struct {
		Resource struct {
			ResourceType string
			ResourceName string
		}
		Changes   []wirePathChange
		FromValue string
		ToValue   string
	}
	wireUnitWrite struct {
		Unit *wireUnit
		Diff *struct {
			Resources []wireResourceDiff
		}
		Error *struct {
			Message string
		}
	}
	wireError struct {
		Code    string
		Message string
	}
)

// call is one request: what it is for, whom it names.
type call struct {
	op          string
	space, unit string
	method      string
	path        string
	query       url.Values
	header      http.Header
	body        []byte
}

func (c *Client) fail(k call, status int, kind error, msg string, cause error) *Error {
	return &Error{Op: k.op, Space: k.space, Unit: k.unit, Status: status, Kind: kind, Message: c.redact(msg), Err: cause}
}

// redact takes the token out of text a server or transport sent back.
func (c *Client) redact(s string) string {
	if c.token == "" || s == "" {
		return s
	}
	return strings.ReplaceAll(s, c.token, "(redacted)")
}

// do sends k and returns the answer when it is 2xx (or 304 for a
// conditional read); anything else is an *Error.
func (c *Client) do(ctx context.Context, k call) (*http.Response, error) {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + k.path
	u.RawQuery = k.query.Encode()
	var body io.Reader
	if k.body != nil {
		body = bytes.NewReader(k.body)
	}
	req, err := http.NewRequestWithContext(ctx, k.method, u.String(), body)
	if err != nil {
		return nil, c.fail(k, 0, ErrRejected, "", err)
	}
	for key, vs := range k.header {
		req.Header[key] = vs
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("User-Agent", c.agent)
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// The transport's error names the URL, never the header.
		return nil, c.fail(k, 0, ErrUnreachable, "", errors.New(c.redact(err.Error())))
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var we wireError
	msg := ""
	if json.Unmarshal(data, &we) == nil && we.Message != "" {
		msg = we.Message
	} else if len(data) > 0 {
		msg = strings.TrimSpace(string(data))
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
	}
	return nil, c.fail(k, resp.StatusCode, kindOf(resp.StatusCode), msg, nil)
}

// decode reads a JSON answer into out.
func (c *Client) decode(k call, resp *http.Response, out any) error {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return c.fail(k, resp.StatusCode, ErrUnreachable, "reading the answer", err)
	}
	if len(data) > maxBody {
		return c.fail(k, resp.StatusCode, ErrBadResponse, fmt.Sprintf("the answer is over %d bytes", maxBody), nil)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return c.fail(k, resp.StatusCode, ErrBadResponse, "", err)
	}
	return nil
}

// list reads every page of a list operation into each.
func (c *Client) list(ctx context.Context, k call, each func(json.RawMessage) error) error {
	q := k.query
	q.Set("limit", strconv.Itoa(pageSize))
	for range maxPages {
		k.query = q
		resp, err := c.do(ctx, k)
		if err != nil {
			return err
		}
		next := resp.Header.Get(continueHeader)
		var page []json.RawMessage
		if err := c.decode(k, resp, &page); err != nil {
			return err
		}
		for _, item := range page {
			if err := each(item); err != nil {
				return c.fail(k, resp.StatusCode, ErrBadResponse, "", err)
			}
		}
		if next == "" {
			return nil
		}
		q = cloneValues(q)
		q.Set("continue", next)
	}
	return c.fail(k, 0, ErrBadResponse, fmt.Sprintf("the list did not end after %d pages", maxPages), nil)
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// findBySlug lists k's entities with a where on Slug and returns the ID of
// the one that has slug; idOf reads an entry's slug and ID (ok false when
// the entry holds no entity). what names the entity in errors.
func (c *Client) findBySlug(ctx context.Context, k call, slug, what string,
	idOf func(json.RawMessage) (gotSlug, id string, ok bool, err error),
) (string, error) {
	if !ValidSlug(slug) {
		return "", c.fail(k, 0, ErrNotFound, "not a valid slug", nil)
	}
	k.query.Set("where", "Slug = '"+slug+"'")
	var found []string
	err := c.list(ctx, k, func(raw json.RawMessage) error {
		got, id, ok, err := idOf(raw)
		if err != nil {
			return err
		}
		if ok && got == slug {
			found = append(found, id)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	switch len(found) {
	case 0:
		return "", c.fail(k, 0, ErrNotFound, "no "+what+" has this slug", nil)
	case 1:
		return found[0], nil
	default:
		return "", c.fail(k, 0, ErrBadResponse, fmt.Sprintf("%d entities have this slug", len(found)), nil)
	}
}

// FindSpace finds a Space by slug (ListSpaces with a where on Slug).
func (c *Client) FindSpace(ctx context.Context, slug string) (Ref, error) {
	k := call{op: "finding", space: slug, method: http.MethodGet, path: "/space", query: url.Values{}}
	id, err := c.findBySlug(ctx, k, slug, "space", func(raw json.RawMessage) (string, string, bool, error) {
		var es wireExtendedSpace
		if err := json.Unmarshal(raw, &es); err != nil || es.Space == nil {
			return "", "", false, err
		}
		return es.Space.Slug, es.Space.SpaceID, true, nil
	})
	if err != nil {
		return Ref{}, err
	}
	return Ref{SpaceSlug: slug, SpaceID: id}, nil
}

// FindUnit finds a Unit by slug in a Space found by FindSpace (ListUnits
// with a where on Slug).
func (c *Client) FindUnit(ctx context.Context, space Ref, slug string) (Ref, error) {
	k := call{op: "finding", space: space.SpaceSlug, unit: slug,
		method: http.MethodGet, path: "/space/" + url.PathEscape(space.SpaceID) + "/unit", query: url.Values{}}
	id, err := c.findBySlug(ctx, k, slug, "unit of the space", func(raw json.RawMessage) (string, string, bool, error) {
		var eu wireExtendedUnit
		if err := json.Unmarshal(raw, &eu); err != nil || eu.Unit == nil {
			return "", "", false, err
		}
		return eu.Unit.Slug, eu.Unit.UnitID, true, nil
	})
	if err != nil {
		return Ref{}, err
	}
	return Ref{SpaceSlug: space.SpaceSlug, UnitSlug: slug, SpaceID: space.SpaceID, UnitID: id}, nil
}

// Resolve finds a Unit by its Space's slug and its own.
func (c *Client) Resolve(ctx context.Context, spaceSlug, unitSlug string) (Ref, error) {
	sp, err := c.FindSpace(ctx, spaceSlug)
	if err != nil {
		if e, ok := errors.AsType[*Error](err); ok && e.Unit == "" {
			e.Unit = unitSlug
		}
		return Ref{}, err
	}
	return c.FindUnit(ctx, sp, unitSlug)
}

func unitPath(r Ref) string {
	return "/space/" + url.PathEscape(r.SpaceID) + "/unit/" + url.PathEscape(r.UnitID)
}

func (w *wireUnit) unit(r Ref) Unit {
	return Unit{Ref: r, Toolchain: w.ToolchainType, DataHash: w.DataHash, DataSize: w.DataSize,
		HeadRevisionNum: w.HeadRevisionNum, LastReleasedRevisionNum: w.LastReleasedRevisionNum,
		LastChangeDescription: w.LastChangeDescription}
}

// GetUnit reads a Unit with its head revision (include=HeadRevisionNum).
func (c *Client) GetUnit(ctx context.Context, r Ref) (Unit, error) {
	k := call{op: "reading", space: r.SpaceSlug, unit: r.UnitSlug,
		method: http.MethodGet, path: unitPath(r), query: url.Values{"include": {"HeadRevisionNum"}}}
	resp, err := c.do(ctx, k)
	if err != nil {
		return Unit{}, err
	}
	var eu wireExtendedUnit
	if err := c.decode(k, resp, &eu); err != nil {
		return Unit{}, err
	}
	if eu.Unit == nil || eu.Unit.UnitID != r.UnitID {
		return Unit{}, c.fail(k, resp.StatusCode, ErrBadResponse, "the answer is not this unit", nil)
	}
	return eu.Unit.unit(r), nil
}

// Download reads a Unit's data (DownloadUnitData), bounded by MaxDataSize,
// with its hash from the ETag, checked against the bytes.
func (c *Client) Download(ctx context.Context, r Ref) (Data, error) {
	k := call{op: "downloading the data of", space: r.SpaceSlug, unit: r.UnitSlug,
		method: http.MethodGet, path: unitPath(r) + "/data",
		query: url.Values{}, header: http.Header{"Accept": {"application/octet-stream"}}}
	resp, err := c.do(ctx, k)
	if err != nil {
		return Data{}, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > c.maxData {
		msg := fmt.Sprintf("%d bytes, over the %d bytes backflow reads", resp.ContentLength, c.maxData)
		return Data{}, c.fail(k, resp.StatusCode, ErrTooLarge, msg, nil)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxData+1))
	if err != nil {
		return Data{}, c.fail(k, resp.StatusCode, ErrUnreachable, "reading the data", err)
	}
	if int64(len(data)) > c.maxData {
		msg := fmt.Sprintf("over the %d bytes backflow reads", c.maxData)
		return Data{}, c.fail(k, resp.StatusCode, ErrTooLarge, msg, nil)
	}
	hash := strings.Trim(strings.TrimPrefix(resp.Header.Get("ETag"), "W/"), `"`)
	if hash == "" {
		return Data{}, c.fail(k, resp.StatusCode, ErrBadResponse, "the data came without an ETag (its DataHash)", nil)
	}
	if got := Hash(data); got != hash {
		msg := fmt.Sprintf("the data's SHA-256 is %s, its ETag says %s", got, hash)
		return Data{}, c.fail(k, resp.StatusCode, ErrBadResponse, msg, nil)
	}
	return Data{Bytes: data, Hash: hash}, nil
}

// Upload writes data as the Unit's new revision (UploadUnitData), with the
// diff it made (include=Diff), conditional on w.IfMatch.
func (c *Client) Upload(ctx context.Context, r Ref, data []byte, w Write) (Written, error) {
	op := "writing a revision of"
	if w.DryRun {
		op = "trying (dry run) a revision of"
	}
	q := url.Values{"include": {"Diff"}}
	if w.Description != "" {
		q.Set("last_change_description", w.Description)
	}
	if w.DryRun {
		q.Set("dry_run", "true")
	}
	h := http.Header{"Content-Type": {"application/octet-stream"}}
	if w.IfMatch != "" {
		h.Set("If-Match", `"`+w.IfMatch+`"`)
	}
	k := call{op: op, space: r.SpaceSlug, unit: r.UnitSlug,
		method: http.MethodPut, path: unitPath(r) + "/data", query: q, header: h, body: data}
	if int64(len(data)) > c.maxData {
		msg := fmt.Sprintf("%d bytes, over the %d bytes backflow writes", len(data), c.maxData)
		return Written{}, c.fail(k, 0, ErrTooLarge, msg, nil)
	}
	if w.IfMatch == "" {
		// Fail closed: an unconditional write could overwrite a change
		// backflow never saw.
		return Written{}, c.fail(k, 0, ErrRejected, "a write must name the DataHash it was planned against", nil)
	}
	resp, err := c.do(ctx, k)
	if err != nil {
		return Written{}, err
	}
	var out wireUnitWrite
	if err := c.decode(k, resp, &out); err != nil {
		return Written{}, err
	}
	if out.Error != nil && out.Error.Message != "" {
		return Written{}, c.fail(k, resp.StatusCode, ErrRejected, out.Error.Message, nil)
	}
	if out.Unit == nil || out.Unit.UnitID != r.UnitID {
		return Written{}, c.fail(k, resp.StatusCode, ErrBadResponse, "the answer is not this unit", nil)
	}
	wr := Written{Unit: out.Unit.unit(r)}
	if out.Diff == nil {
		return Written{}, c.fail(k, resp.StatusCode, ErrBadResponse,
			"the answer has no Diff although include=Diff asked for it", nil)
	}
	for _, rd := range out.Diff.Resources {
		if len(rd.Changes) == 0 && (rd.FromValue != "" || rd.ToValue != "") {
			// A whole resource added (ToValue) or removed (FromValue): a
			// change at the resource itself, path "".
			typ := "Add"
			if rd.ToValue == "" {
				typ = "Delete"
			}
			wr.Changes = append(wr.Changes, Change{ResourceType: rd.Resource.ResourceType,
				ResourceName: rd.Resource.ResourceName,
				Type:         typ, From: rd.FromValue, To: rd.ToValue})
		}
		for _, pc := range rd.Changes {
			wr.Changes = append(wr.Changes, Change{
				ResourceType: rd.Resource.ResourceType, ResourceName: rd.Resource.ResourceName,
				Path: pc.Path, Type: pc.ChangeType, From: pc.FromValue, To: pc.ToValue})
		}
	}
	return wr, nil
}

func (w *wireRevision) revision() Revision {
	return Revision{ID: w.RevisionID, Num: w.RevisionNum, UserID: w.UserID, Description: w.Description,
		Source: w.Source, DataHash: w.DataHash, CreatedAt: w.CreatedAt}
}

// Revisions lists a Unit's revisions (ListExtendedRevisions), every page.
func (c *Client) Revisions(ctx context.Context, r Ref) ([]Revision, error) {
	k := call{op: "listing the revisions of", space: r.SpaceSlug, unit: r.UnitSlug,
		method: http.MethodGet, path: unitPath(r) + "/revision", query: url.Values{}}
	var out []Revision
	err := c.list(ctx, k, func(raw json.RawMessage) error {
		var er wireExtendedRevision
		if err := json.Unmarshal(raw, &er); err != nil {
			return err
		}
		if er.Revision == nil {
			return errors.New("an entry without its Revision")
		}
		out = append(out, er.Revision.revision())
		return nil
	})
	return out, err
}

// Revision reads one revision by its number: the list with a where on
// RevisionNum, then GetExtendedRevision by its ID.
func (c *Client) Revision(ctx context.Context, r Ref, num int64) (Revision, error) {
	k := call{op: fmt.Sprintf("reading revision %d of", num), space: r.SpaceSlug, unit: r.UnitSlug,
		method: http.MethodGet, path: unitPath(r) + "/revision",
		query: url.Values{"where": {"RevisionNum = " + strconv.FormatInt(num, 10)}}}
	var id string
	err := c.list(ctx, k, func(raw json.RawMessage) error {
		var er wireExtendedRevision
		if err := json.Unmarshal(raw, &er); err != nil {
			return err
		}
		if er.Revision != nil && er.Revision.RevisionNum == num {
			id = er.Revision.RevisionID
		}
		return nil
	})
	if err != nil {
		return Revision{}, err
	}
	if id == "" {
		return Revision{}, c.fail(k, 0, ErrNotFound, "no such revision", nil)
	}
	k.path, k.query = unitPath(r)+"/revision/"+url.PathEscape(id), url.Values{}
	resp, err := c.do(ctx, k)
	if err != nil {
		return Revision{}, err
	}
	var er wireExtendedRevision
	if err := c.decode(k, resp, &er); err != nil {
		return Revision{}, err
	}
	if er.Revision == nil || er.Revision.RevisionNum != num {
		return Revision{}, c.fail(k, resp.StatusCode, ErrBadResponse, "the answer is not this revision", nil)
	}
	return er.Revision.revision(), nil
}
