package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// This file reads the admission.k8s.io/v1 AdmissionReview a validating
// admission webhook receives from the API server, into a record of who asked
// to change which fields of which object to which values, and writes the
// answer, which always allows: backflow only watches.

// admissionAPIVersion is the only AdmissionReview version read.
const admissionAPIVersion = "admission.k8s.io/v1"

// Sentinels of ParseAdmissionReview.
var (
	// ErrAdmissionReview: the body is not an admission.k8s.io/v1
	// AdmissionReview request.
	ErrAdmissionReview = errors.New("not an admission.k8s.io/v1 AdmissionReview request")
	// ErrAdmissionTooManyFields: the review changes more fields than a
	// record keeps.
	ErrAdmissionTooManyFields = errors.New("the review changes too many fields")
)

// MaxAdmissionFields bounds the changed fields one record keeps; a review
// changing more is not recorded.
const MaxAdmissionFields = 1000

// AdmissionRecord is one admission review of a write: who the API server
// authenticated, what they asked to change, and, once the watch has seen
// the write, whether it happened.
type AdmissionRecord struct {
	// ReviewUID is the review's request uid.
	ReviewUID string
	// Received is when backflow received the review (its own clock: a
	// review carries no time).
	Received time.Time
	// Operation is the admission operation, UPDATE: the API server reviews
	// an update, every kind of patch and a server-side apply alike, as an
	// UPDATE with UpdateOptions.
	Operation string
	// User and Groups are the authenticated user the write is authorized
	// as. Under impersonation that is the impersonated user: the review
	// does not name the impersonator (the audit log does).
	User   string
	Groups []string
	// Manager is the request's fieldManager option, if any.
	Manager string
	// Object is the object written: its resource (with the subresource
	// written through), namespace and name.
	Object AuditObject
	// UID is the object's metadata.uid.
	UID string
	// OldResourceVersion is the object's resourceVersion before the write.
	OldResourceVersion string
	// Fields are the fields whose values differ between the old and the
	// new object, sorted by path.
	Fields []AdmissionField
	// Intent is the backflow.dev/intent annotation the write set, valid when
	// HasIntent.
	Intent    string
	HasIntent bool

	// Cluster, ConfirmedAt and ConfirmedVersion say which cluster's watch
	// confirmed the write, when and at which resourceVersion; empty until
	// then.
	Cluster          string
	ConfirmedAt      time.Time
	ConfirmedVersion string
	// Disputed, when set, says how another record of the same transition
	// disagrees with this one: the join then attributes its fields to
	// nobody.
	Disputed string

	// held is what HeldBytes counted when the log took the record.
	held int64
}

// AdmissionField is one field a reviewed write changes.
type AdmissionField struct {
	// Path is the field path (spec.replicas, spec.template.spec.containers[0].image).
	Path string
	// Value is the new value; nil when Removed.
	Value any
	// Removed says the write removes the field.
	Removed bool
	// Confirmed says the watch saw the object carry Value at a newer
	// resourceVersion.
	Confirmed bool

	segs []yamlnode.Segment
}

// FieldPaths lists the paths of r's fields.
func (r *AdmissionRecord) FieldPaths() []string {
	out := make([]string, len(r.Fields))
	for i, f := range r.Fields {
		out[i] = f.Path
	}
	return out
}

// Confirmed reports whether the watch confirmed at least one of r's fields.
func (r *AdmissionRecord) Confirmed() bool {
	return slices.ContainsFunc(r.Fields, func(f AdmissionField) bool { return f.Confirmed })
}

// AdmissionOptions say which reviews are not changes to record.
type AdmissionOptions struct {
	// GitOpsUsers are the usernames of the GitOps controllers: their writes
	// are desired state, not a person's change.
	GitOpsUsers []string
	// GitOpsGroups are groups whose members' writes are the GitOps
	// controllers' (a controller's service account group, say).
	GitOpsGroups []string
}

// AdmissionReview is what one review body yielded.
type AdmissionReview struct {
	// UID is the request uid the answer must echo; empty when the body did
	// not carry one.
	UID string
	// Record is the change to keep; nil when the review is not one.
	Record *AdmissionRecord
	// Skipped says why a well-formed review is not recorded (dry run, a
	// GitOps controller, an operation other than UPDATE, no field changed).
	Skipped string
}

// rawAdmissionReview is the part of admission.k8s.io/v1 AdmissionReview
// that is read.
type rawAdmissionReview struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		UID      string `json:"uid"`
		Resource struct {
			Group    string `json:"group"`
			Version  string `json:"version"`
			Resource string `json:"resource"`
		} `json:"resource"`
		SubResource string `json:"subResource"`
		Name        string `json:"name"`
		Namespace   string `json:"namespace"`
		Operation   string `json:"operation"`
		UserInfo    struct {
			Username string   `json:"username"`
			Groups   []string `json:"groups"`
		} `json:"userInfo"`
		Object    json.RawMessage `json:"object"`
		OldObject json.RawMessage `json:"oldObject"`
		DryRun    *bool           `json:"dryRun"`
		Options   struct {
			FieldManager string `json:"fieldManager"`
		} `json:"options"`
	} `json:"request"`
}

// ParseAdmissionReview reads one AdmissionReview request body. A review
// that is well formed but no change to record comes back with Skipped set
// and no Record; a body that cannot be read is an error (wrapping
// ErrAdmissionReview), with the request uid when it could be read.
func ParseAdmissionReview(body []byte, opts AdmissionOptions) (AdmissionReview, error) {
	var raw rawAdmissionReview
	if err := json.Unmarshal(body, &raw); err != nil {
		return AdmissionReview{}, fmt.Errorf("%w: %w", ErrAdmissionReview, err)
	}
	if raw.APIVersion != admissionAPIVersion || raw.Kind != "AdmissionReview" || raw.Request == nil {
		return AdmissionReview{}, fmt.Errorf("%w: kind %q apiVersion %q", ErrAdmissionReview, raw.Kind, raw.APIVersion)
	}
	rq := raw.Request
	out := AdmissionReview{UID: rq.UID}
	if rq.UID == "" {
		return out, fmt.Errorf("%w: request.uid is empty", ErrAdmissionReview)
	}
	switch {
	case rq.DryRun != nil && *rq.DryRun:
		out.Skipped = "dry run"
		return out, nil
	case rq.Operation != "UPDATE":
		out.Skipped = "operation " + rq.Operation
		return out, nil
	case rq.SubResource != "" && rq.SubResource != "scale":
		// status is not desired state; other subresources do not write
		// the object's fields as such.
		out.Skipped = "subresource " + rq.SubResource
		return out, nil
	case rq.UserInfo.Username == "":
		return out, fmt.Errorf("%w: request.userInfo.username is empty", ErrAdmissionReview)
	case rq.Name == "" || rq.Resource.Resource == "" || rq.Resource.Version == "":
		return out, fmt.Errorf("%w: request names no object (resource and name)", ErrAdmissionReview)
	case slices.Contains(opts.GitOpsUsers, rq.UserInfo.Username) ||
		slices.ContainsFunc(rq.UserInfo.Groups, func(g string) bool { return slices.Contains(opts.GitOpsGroups, g) }):
		out.Skipped = "GitOps controller"
		return out, nil
	}
	obj, err := decodeAdmissionObject(rq.Object)
	if err != nil {
		return out, fmt.Errorf("%w: request.object: %w", ErrAdmissionReview, err)
	}
	old, err := decodeAdmissionObject(rq.OldObject)
	if err != nil {
		return out, fmt.Errorf("%w: request.oldObject: %w", ErrAdmissionReview, err)
	}
	rec := &AdmissionRecord{
		ReviewUID: rq.UID, Operation: rq.Operation,
		User: rq.UserInfo.Username, Groups: slices.Clone(rq.UserInfo.Groups),
		Manager: rq.Options.FieldManager,
		Object: AuditObject{Group: rq.Resource.Group, Version: rq.Resource.Version, Resource: rq.Resource.Resource,
			Subresource: rq.SubResource, Namespace: rq.Namespace, Name: rq.Name},
	}
	rec.UID = metaString(obj, "uid")
	if old := metaString(old, "uid"); rec.UID == "" || old != rec.UID {
		return out, fmt.Errorf("%w: object and oldObject must carry the same metadata.uid", ErrAdmissionReview)
	}
	// One object: the name and namespace the request names are those its
	// object and oldObject carry (a Scale carries its object's).
	for _, o := range []map[string]any{obj, old} {
		if metaString(o, "name") != rq.Name || metaString(o, "namespace") != rq.Namespace {
			return out, fmt.Errorf("%w: request names %s/%s, its objects carry %s/%s", ErrAdmissionReview,
				rq.Namespace, rq.Name, metaString(o, "namespace"), metaString(o, "name"))
		}
	}
	rec.OldResourceVersion = metaString(old, "resourceVersion")
	d := &differ{}
	if rq.SubResource == "scale" {
		// A Scale's spec.replicas is the scaled object's.
		d.diff(
			[]yamlnode.Segment{{Key: "spec"}, {Key: "replicas"}},
			dig(old, "spec", "replicas"),
			dig(obj, "spec", "replicas"),
		)
	} else {
		d.object(old, obj)
		rec.Intent, rec.HasIntent = intentOf(old, obj)
	}
	if d.over {
		return out, fmt.Errorf("%w: more than %d", ErrAdmissionTooManyFields, MaxAdmissionFields)
	}
	if len(d.fields) == 0 {
		out.Skipped = "no field changed"
		return out, nil
	}
	sort.Slice(d.fields, func(i, j int) bool { return d.fields[i].Path < d.fields[j].Path })
	rec.Fields = d.fields
	out.Record = rec
	return out, nil
}

// decodeAdmissionObject reads an object of a review with numbers as the
// watch's objects hold them (int64, or float64 when not whole).
func decodeAdmissionObject(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, errors.New("missing")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	m, ok := normalizeNumbers(v).(map[string]any)
	if !ok {
		return nil, errors.New("want a JSON object")
	}
	return m, nil
}

// normalizeNumbers turns json.Number into int64 or float64, as client-go's
// unstructured objects hold them.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
	}
	return v
}

// intentOf is the backflow.dev/intent annotation the write from old to obj
// set, when it set one.
func intentOf(old, obj map[string]any) (string, bool) {
	if v, ok := dig(obj, "metadata", "annotations", IntentAnnotation).(string); ok &&
		!values.Equal(v, dig(old, "metadata", "annotations", IntentAnnotation)) {
		return v, true
	}
	return "", false
}

// metaStringTop reads a top-level string of obj (apiVersion, kind).
func metaStringTop(obj map[string]any, key string) string {
	s, _ := obj[key].(string)
	return s
}

func metaString(obj map[string]any, key string) string {
	s, _ := dig(obj, "metadata", key).(string)
	return s
}

// dig reads the value at keys; nil where a step is missing.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// admissionIgnored are the fields the API server itself maintains, and
// fields that are never desired state: they differ on every write or are
// bookkeeping.
var admissionIgnored = map[string]bool{
	"metadata.managedFields": true, "metadata.resourceVersion": true, "metadata.generation": true,
	"metadata.creationTimestamp": true, "metadata.uid": true, "metadata.selfLink": true,
	"status": true,
}

// differ collects the fields whose values differ between two objects.
type differ struct {
	fields []AdmissionField
	over   bool
}

// object diffs two whole objects, leaving out admissionIgnored and the
// ignoredPaths of live changes.
func (d *differ) object(old, obj map[string]any) {
	d.diff(nil, old, obj)
	kept := d.fields[:0]
	for _, f := range d.fields {
		if !admissionIgnored[topTwo(f.segs)] && !admissionIgnored[topOne(f.segs)] && !slices.Contains(ignoredPaths, f.Path) {
			kept = append(kept, f)
		}
	}
	d.fields = kept
}

func topOne(segs []yamlnode.Segment) string {
	if len(segs) == 0 {
		return ""
	}
	return segs[0].Key
}

func topTwo(segs []yamlnode.Segment) string {
	if len(segs) < 2 {
		return topOne(segs)
	}
	return segs[0].Key + "." + segs[1].Key
}

// diff records where b differs from a below prefix: mappings key by key,
// lists index by index (items added or removed as a whole), anything else
// as a leaf.
func (d *differ) diff(prefix []yamlnode.Segment, a, b any) {
	if d.over {
		return
	}
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			keys := make([]string, 0, len(x)+len(y))
			for k := range x {
				keys = append(keys, k)
			}
			for k := range y {
				if _, ok := x[k]; !ok {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				p := append(slices.Clone(prefix), yamlnode.Segment{Key: k})
				va, ina := x[k]
				vb, inb := y[k]
				switch {
				case !inb:
					d.add(p, nil, true)
				case !ina:
					d.add(p, vb, false)
				default:
					d.diff(p, va, vb)
				}
			}
			return
		}
	case []any:
		if y, ok := b.([]any); ok {
			for i := 0; i < max(len(x), len(y)); i++ {
				p := append(slices.Clone(prefix), yamlnode.Segment{IsIndex: true, Index: i})
				switch {
				case i >= len(y):
					d.add(p, nil, true)
				case i >= len(x):
					d.add(p, y[i], false)
				default:
					d.diff(p, x[i], y[i])
				}
			}
			return
		}
	}
	if b == nil && a != nil {
		d.add(prefix, nil, true)
		return
	}
	if !values.Equal(a, b) {
		d.add(prefix, b, false)
	}
}

func (d *differ) add(p []yamlnode.Segment, v any, removed bool) {
	if len(d.fields) >= MaxAdmissionFields {
		d.over = true
		return
	}
	d.fields = append(d.fields, AdmissionField{Path: formatSegs(p), Value: v, Removed: removed, segs: p})
}

// AdmissionAllow is the answer to a review: allowed, echoing its uid. It
// is the only answer backflow gives.
func AdmissionAllow(uid string) []byte {
	b, _ := json.Marshal(map[string]any{
		"apiVersion": admissionAPIVersion, "kind": "AdmissionReview",
		"response": map[string]any{"uid": uid, "allowed": true},
	})
	return b
}

// AdmissionUID reads only the request uid of a body, to echo it even when
// the rest cannot be read; empty when it cannot.
func AdmissionUID(body []byte) string {
	var v struct {
		Request struct {
			UID string `json:"uid"`
		} `json:"request"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	return v.Request.UID
}

// admissionEvidence names a record for receipts: the review, who, what and
// when, and the confirming resourceVersion.
func admissionEvidence(r *AdmissionRecord) string {
	who := r.User
	if len(r.Groups) > 0 {
		who += " (groups " + strings.Join(r.Groups, ", ") + ")"
	}
	return fmt.Sprintf(
		"admission review %s: %s %s by %s received at %s, confirmed by the watch of cluster %s at resourceVersion %s",
		r.ReviewUID,
		r.Operation,
		r.Object,
		who,
		r.Received.UTC().Format(time.RFC3339),
		r.Cluster,
		r.ConfirmedVersion,
	)
}
