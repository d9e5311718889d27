package confighubtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// BasePath is where the API is served, as https://hub.confighub.com/api is.
const BasePath = "/api"

// ToolchainKubernetesYAML is the toolchain of rendered Kubernetes manifests.
const ToolchainKubernetesYAML = "Kubernetes/YAML"

// The operations served, by the description's operationId.
const (
	OpListSpaces       = "ListSpaces"
	OpListUnits        = "ListUnits"
	OpGetUnit          = "GetUnit"
	OpDownloadUnitData = "DownloadUnitData"
	OpUploadUnitData   = "UploadUnitData"
	OpListRevisions    = "ListExtendedRevisions"
	OpGetRevision      = "GetExtendedRevision"
)

// Options configure a Server.
type Options struct {
	// Tokens maps each accepted bearer token to the UserID it acts as.
	Tokens map[string]string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// PageSize caps each page of a list below the request's limit (a page
	// may hold fewer entities than the limit and still be followed by
	// more); 0 leaves the limit alone.
	PageSize int
	// MaxDataSize refuses an upload over it (400); 0 for no limit.
	MaxDataSize int64
	// Mutate, when set, changes uploaded data before it is stored (and
	// before a dry run's diff), as a ConfigHub mutating trigger does.
	Mutate func(data []byte) []byte
}

// Revision is one stored revision, as the Go API shows it.
type Revision struct {
	ID          string
	Num         int64
	UserID      string
	Description string
	Source      string
	DataHash    string
	Data        []byte
	CreatedAt   time.Time
}

type space struct {
	id, slug string
	created  time.Time
	units    []*unit
}

type unit struct {
	id, slug, toolchain string
	space               *space
	data                []byte
	revisions           []*Revision
	lastReleased        int64
	created, updated    time.Time
}

func (u *unit) head() *Revision { return u.revisions[len(u.revisions)-1] }

type fault struct {
	op     string
	status int
	hang   bool
	left   int
}

// Server is the stand-in. Its Go methods set up state, change it as
// someone else would, and inject faults; Handler serves the API.
type Server struct {
	opts Options

	mu       sync.Mutex
	seq      int
	spaces   []*space
	faults   []*fault
	requests map[string]int
	closed   chan struct{}
	org      string
}

// New makes an empty stand-in.
func New(opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, requests: map[string]int{}, closed: make(chan struct{})}
	s.org = s.newID(0)
	return s
}

// Listen serves s on a free loopback port until Close; it returns the
// API's base URL (ending in BasePath).
func (s *Server) Listen() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop := func() {
		s.Close()
		_ = srv.Close()
	}
	return "http://" + ln.Addr().String() + BasePath, stop, nil
}

// Close releases every hanging request.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
}

// newID makes a UUID, unique in s and the same from run to run.
func (s *Server) newID(kind int) string {
	s.seq++
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", kind, s.seq)
}

// Hash is a DataHash: hex SHA-256.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// AddSpace creates a Space.
func (s *Server) AddSpace(slug string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := &space{id: s.newID(1), slug: slug, created: s.opts.Now().UTC()}
	s.spaces = append(s.spaces, sp)
	return sp.id
}

// AddUnit creates a Unit in the Space slug names, with data as its first
// revision, made by userID.
func (s *Server) AddUnit(spaceSlug, slug, toolchain string, data []byte, userID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.spaceBySlug(spaceSlug)
	if sp == nil {
		return "", fmt.Errorf("no space %q", spaceSlug)
	}
	now := s.opts.Now().UTC()
	u := &unit{id: s.newID(2), slug: slug, toolchain: toolchain, space: sp, created: now}
	s.addRevision(u, data, userID, "", "CreateUnit")
	sp.units = append(sp.units, u)
	return u.id, nil
}

func (s *Server) addRevision(u *unit, data []byte, userID, desc, source string) *Revision {
	now := s.opts.Now().UTC()
	r := &Revision{ID: s.newID(3), Num: int64(len(u.revisions)) + 1, UserID: userID, Description: desc, Source: source,
		DataHash: Hash(data), Data: bytes.Clone(data), CreatedAt: now}
	u.revisions = append(u.revisions, r)
	u.data, u.updated = r.Data, now
	return r
}

// Write stores data as a new revision of a Unit, as another user of
// ConfigHub would: what a concurrent change between a plan and its write
// looks like.
func (s *Server) Write(spaceSlug, unitSlug string, data []byte, userID, desc string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.unitBySlugs(spaceSlug, unitSlug)
	if u == nil {
		return 0, fmt.Errorf("no unit %s/%s", spaceSlug, unitSlug)
	}
	return s.addRevision(u, data, userID, desc, "UploadUnitData").Num, nil
}

// Apply releases a Unit's head revision, as ConfigHub's worker applying it
// to its Target does, and returns its number and data: a test then applies
// the data to its cluster.
func (s *Server) Apply(spaceSlug, unitSlug string) (int64, []byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.unitBySlugs(spaceSlug, unitSlug)
	if u == nil {
		return 0, nil, fmt.Errorf("no unit %s/%s", spaceSlug, unitSlug)
	}
	h := u.head()
	u.lastReleased = h.Num
	return h.Num, bytes.Clone(h.Data), nil
}

// Data is a Unit's current data.
func (s *Server) Data(spaceSlug, unitSlug string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := s.unitBySlugs(spaceSlug, unitSlug); u != nil {
		return bytes.Clone(u.data)
	}
	return nil
}

// Revisions are a Unit's revisions, oldest first.
func (s *Server) Revisions(spaceSlug, unitSlug string) []Revision {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.unitBySlugs(spaceSlug, unitSlug)
	if u == nil {
		return nil
	}
	out := make([]Revision, len(u.revisions))
	for i, r := range u.revisions {
		out[i] = *r
		out[i].Data = bytes.Clone(r.Data)
	}
	return out
}

// Fail answers the next times requests of op (an operationId, "" for any)
// with status and a StandardErrorResponse.
func (s *Server) Fail(op string, status, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{op: op, status: status, left: times})
}

// Hang holds the next times requests of op unanswered until the client
// gives up (its context ends) or the server closes: a timeout.
func (s *Server) Hang(op string, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{op: op, hang: true, left: times})
}

// Requests counts the requests of op that reached the server ("" for all).
func (s *Server) Requests(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if op == "" {
		n := 0
		for _, c := range s.requests {
			n += c
		}
		return n
	}
	return s.requests[op]
}

func (s *Server) spaceBySlug(slug string) *space {
	for _, sp := range s.spaces {
		if sp.slug == slug {
			return sp
		}
	}
	return nil
}

func (s *Server) spaceByID(id string) *space {
	for _, sp := range s.spaces {
		if sp.id == id {
			return sp
		}
	}
	return nil
}

func (s *Server) unitBySlugs(spaceSlug, unitSlug string) *unit {
	sp := s.spaceBySlug(spaceSlug)
	if sp == nil {
		return nil
	}
	for _, u := range sp.units {
		if u.slug == unitSlug {
			return u
		}
	}
	return nil
}

// Handler serves the API under BasePath.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern, op string, h func(http.ResponseWriter, *http.Request)) {
		method, path, _ := strings.Cut(pattern, " ")
		mux.HandleFunc(method+" "+BasePath+path, func(w http.ResponseWriter, r *http.Request) { s.serve(op, w, r, h) })
	}
	route("GET /space", OpListSpaces, s.listSpaces)
	route("GET /space/{space_id}/unit", OpListUnits, s.listUnits)
	route("GET /space/{space_id}/unit/{unit_id}", OpGetUnit, s.getUnit)
	route("GET /space/{space_id}/unit/{unit_id}/data", OpDownloadUnitData, s.download)
	route("PUT /space/{space_id}/unit/{unit_id}/data", OpUploadUnitData, s.upload)
	route("GET /space/{space_id}/unit/{unit_id}/revision", OpListRevisions, s.listRevisions)
	route("GET /space/{space_id}/unit/{unit_id}/revision/{revision_id}", OpGetRevision, s.getRevision)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such operation: "+r.Method+" "+r.URL.Path)
	})
	return mux
}

// serve counts, authenticates and injects faults before h.
func (s *Server) serve(op string, w http.ResponseWriter, r *http.Request, h func(http.ResponseWriter, *http.Request)) {
	s.mu.Lock()
	s.requests[op]++
	var f *fault
	for _, c := range s.faults {
		if c.left > 0 && (c.op == "" || c.op == op) {
			c.left--
			f = c
			break
		}
	}
	closed := s.closed
	s.mu.Unlock()
	if f != nil && f.hang {
		select {
		case <-r.Context().Done():
		case <-closed:
		}
		return
	}
	if f != nil {
		writeError(w, f.status, http.StatusText(f.status))
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if _, known := s.opts.Tokens[token]; !ok || !known {
		writeError(w, http.StatusUnauthorized, "Unauthorized access.")
		return
	}
	h(w, r)
}

// writeError answers a StandardErrorResponse.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"Code": strconv.Itoa(status), "Message": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// where is the subset of the where syntax the stand-in evaluates: one
// `Attr = 'string'` or `Attr = integer`, or a conjunction of them with AND.
var whereTerm = regexp.MustCompile(`^\s*([A-Za-z]+)\s*=\s*(?:'([^']*)'|(-?[0-9]+))\s*$`)

func parseWhere(expr string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(expr) == "" {
		return out, nil
	}
	for _, term := range strings.Split(expr, " AND ") {
		m := whereTerm.FindStringSubmatch(term)
		if m == nil {
			return nil, fmt.Errorf("where expression %q is not supported by this server", expr)
		}
		out[m[1]] = m[2] + m[3]
	}
	return out, nil
}

// page cuts a list of items in ID order at the request's continue token
// and limit, and sets ConfigHub-Continue when more follow.
func page[T any](s *Server, w http.ResponseWriter, r *http.Request, items []T, id func(T) string) ([]T, bool) {
	q := r.URL.Query()
	limit := len(items)
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 || n > 1000 {
			writeError(w, http.StatusBadRequest, "limit must be an integer from 0 to 1000")
			return nil, false
		}
		limit = n
	}
	if s.opts.PageSize > 0 && (q.Has("limit") || q.Has("continue")) && limit > s.opts.PageSize {
		limit = s.opts.PageSize
	}
	slices.SortFunc(items, func(a, b T) int { return strings.Compare(id(a), id(b)) })
	if c := q.Get("continue"); c != "" {
		after, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil {
			writeError(w, http.StatusBadRequest, "continue is not a token this server issued")
			return nil, false
		}
		i, _ := slices.BinarySearchFunc(items, string(after), func(t T, k string) int { return strings.Compare(id(t), k) })
		for i < len(items) && id(items[i]) <= string(after) {
			i++
		}
		items = items[i:]
	}
	if len(items) > limit {
		items = items[:limit]
		if limit > 0 {
			w.Header().Set("ConfigHub-Continue", base64.RawURLEncoding.EncodeToString([]byte(id(items[limit-1]))))
		}
	}
	return items, true
}

// serveList answers a list operation: of the entities all returns (under
// s.mu; false when it already answered, as a 404), those the where
// expression matches, paged, each wrapped as its Extended entity.
func serveList[T any](s *Server, w http.ResponseWriter, r *http.Request, all func() ([]T, bool),
	id func(T) string, match func(T, map[string]string) bool, wrap func(T) any,
) {
	cond, err := parseWhere(r.URL.Query().Get("where"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	items, ok := all()
	if !ok {
		return
	}
	var hit []T
	for _, it := range items {
		if match(it, cond) {
			hit = append(hit, it)
		}
	}
	got, ok := page(s, w, r, hit, id)
	if !ok {
		return
	}
	out := make([]any, len(got))
	for i, it := range got {
		out[i] = wrap(it)
	}
	writeJSON(w, http.StatusOK, out)
}

// is reports whether cond, if it names attr, names v.
func is(cond map[string]string, attr, v string) bool {
	want, ok := cond[attr]
	return !ok || want == v
}

func (s *Server) listSpaces(w http.ResponseWriter, r *http.Request) {
	serveList(s, w, r, func() ([]*space, bool) { return slices.Clone(s.spaces), true },
		func(sp *space) string { return sp.id },
		func(sp *space, cond map[string]string) bool {
			return is(cond, "Slug", sp.slug) && is(cond, "SpaceID", sp.id)
		},
		func(sp *space) any { return map[string]any{"Space": s.spaceJSON(sp)} })
}

func (s *Server) listUnits(w http.ResponseWriter, r *http.Request) {
	serveList(s, w, r, func() ([]*unit, bool) {
		sp, _ := s.lookup(w, r)
		if sp == nil {
			return nil, false
		}
		return slices.Clone(sp.units), true
	},
		func(u *unit) string { return u.id },
		func(u *unit, cond map[string]string) bool {
			return is(cond, "Slug", u.slug) && is(cond, "UnitID", u.id)
		},
		func(u *unit) any { return map[string]any{"Unit": s.unitJSON(u, u.data, u.head())} })
}

func (s *Server) listRevisions(w http.ResponseWriter, r *http.Request) {
	var u *unit
	serveList(s, w, r, func() ([]*Revision, bool) {
		_, u = s.lookup(w, r)
		if u == nil {
			return nil, false
		}
		return slices.Clone(u.revisions), true
	},
		func(rev *Revision) string { return rev.ID },
		func(rev *Revision, cond map[string]string) bool {
			return is(cond, "RevisionNum", strconv.FormatInt(rev.Num, 10))
		},
		func(rev *Revision) any { return map[string]any{"Revision": s.revisionJSON(u, rev)} })
}

// lookup finds the path's Space and Unit, answering 404 when either is
// missing; the caller holds s.mu.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (*space, *unit) {
	sp := s.spaceByID(r.PathValue("space_id"))
	if sp == nil {
		writeError(w, http.StatusNotFound, "Space not found.")
		return nil, nil
	}
	id := r.PathValue("unit_id")
	if id == "" {
		return sp, nil
	}
	for _, u := range sp.units {
		if u.id == id {
			return sp, u
		}
	}
	writeError(w, http.StatusNotFound, "Unit not found.")
	return nil, nil
}

func (s *Server) getUnit(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, u := s.lookup(w, r)
	if u == nil {
		return
	}
	out := map[string]any{"Unit": s.unitJSON(u, u.data, u.head())}
	if slices.Contains(strings.Split(r.URL.Query().Get("include"), ","), "HeadRevisionNum") {
		out["HeadRevision"] = s.revisionJSON(u, u.head())
	}
	writeJSON(w, http.StatusOK, out)
}

// etagValue is an ETag header's hash, without quotes or weakness.
func etagValue(h string) string {
	return strings.Trim(strings.TrimPrefix(strings.TrimSpace(h), "W/"), `"`)
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	_, u := s.lookup(w, r)
	if u == nil {
		s.mu.Unlock()
		return
	}
	data, hash := u.data, u.head().DataHash
	s.mu.Unlock()
	w.Header().Set("ETag", `"`+hash+`"`)
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagValue(inm) == hash {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	limit := s.opts.MaxDataSize
	if limit <= 0 {
		limit = 64 << 20
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	if int64(len(body)) > limit {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the configuration data is over %d bytes", limit))
		return
	}
	if s.opts.Mutate != nil {
		body = s.opts.Mutate(body)
	}
	q := r.URL.Query()
	dryRun := q.Get("dry_run") == "true"
	include := strings.Split(q.Get("include"), ",")
	userID := s.opts.Tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]

	s.mu.Lock()
	defer s.mu.Unlock()
	_, u := s.lookup(w, r)
	if u == nil {
		return
	}
	head := u.head()
	if im := r.Header.Get("If-Match"); im != "" && etagValue(im) != head.DataHash {
		writeError(w, http.StatusConflict, "Unit data conflict. Data has changed since last read.")
		return
	}
	var diff []resourceDiff
	if u.toolchain == ToolchainKubernetesYAML {
		diff, err = diffManifests(u.data, body)
		if err != nil {
			writeError(w, http.StatusBadRequest,
				"the configuration data does not parse as "+ToolchainKubernetesYAML+": "+err.Error())
			return
		}
	}
	rev, data := head, u.data
	if !bytes.Equal(body, u.data) {
		if dryRun {
			// What the write would store, stored nowhere.
			rev = &Revision{ID: s.newID(3), Num: head.Num + 1, UserID: userID, Description: q.Get("last_change_description"),
				Source: "UploadUnitData", DataHash: Hash(body), Data: body, CreatedAt: s.opts.Now().UTC()}
		} else {
			rev = s.addRevision(u, body, userID, q.Get("last_change_description"), "UploadUnitData")
		}
		data = body
	}
	out := map[string]any{"Unit": s.unitJSON(u, data, rev)}
	if slices.Contains(include, "Diff") {
		out["Diff"] = map[string]any{"Resources": diff}
	}
	if slices.Contains(include, "ConfigData") {
		out["ConfigData"] = string(data)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getRevision(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, u := s.lookup(w, r)
	if u == nil {
		return
	}
	for _, rev := range u.revisions {
		if rev.ID == r.PathValue("revision_id") {
			writeJSON(w, http.StatusOK, map[string]any{"Revision": s.revisionJSON(u, rev)})
			return
		}
	}
	writeError(w, http.StatusNotFound, "ExtendedRevision not found.")
}

const timeFormat = time.RFC3339Nano

func (s *Server) spaceJSON(sp *space) map[string]any {
	return map[string]any{
		"SpaceID": sp.id, "OrganizationID": s.org, "Slug": sp.slug, "DisplayName": sp.slug,
		"EntityType": "Space", "CreatedAt": sp.created.Format(timeFormat),
		"UpdatedAt": sp.created.Format(timeFormat), "Version": 1,
	}
}

// unitJSON is a Unit whose data is data at revision rev (which a dry run
// has not stored).
func (s *Server) unitJSON(u *unit, data []byte, rev *Revision) map[string]any {
	updated := u.updated
	if rev.CreatedAt.After(updated) {
		updated = rev.CreatedAt
	}
	return map[string]any{
		"UnitID": u.id, "SpaceID": u.space.id, "SpaceSlug": u.space.slug, "OrganizationID": s.org,
		"Slug": u.slug, "DisplayName": u.slug, "ToolchainType": u.toolchain, "EntityType": "Unit",
		"DataHash": Hash(data), "DataSize": len(data),
		"HeadRevisionNum": rev.Num, "HeadRevisionID": rev.ID, "LastReleasedRevisionNum": u.lastReleased,
		"LastChangeDescription": rev.Description,
		"CreatedAt":             u.created.Format(timeFormat), "UpdatedAt": updated.Format(timeFormat), "Version": rev.Num,
	}
}

func (s *Server) revisionJSON(u *unit, rev *Revision) map[string]any {
	return map[string]any{
		"RevisionID": rev.ID, "RevisionNum": rev.Num, "UnitID": u.id, "UnitSlug": u.slug,
		"SpaceID": u.space.id, "SpaceSlug": u.space.slug, "OrganizationID": s.org, "EntityType": "Revision",
		"UserID": rev.UserID, "Description": rev.Description, "Source": rev.Source,
		"DataHash": rev.DataHash, "DataSize": len(rev.Data),
		"CreatedAt": rev.CreatedAt.Format(timeFormat), "UpdatedAt": rev.CreatedAt.Format(timeFormat), "Version": 1,
	}
}
