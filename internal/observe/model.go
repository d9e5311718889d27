package observe

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/values"
)

// Native document identity: the apiVersion and kind of backflow's own
// observation documents.
const (
	APIVersion = "backflow.dev/v1alpha1"
	Kind       = "ObjectStateObserved"
)

// Names of the observers a document may say it came from.
const (
	SourceCubScout   = "cub-scout"
	SourceKubernetes = "kubernetes"
	SourceFile       = "file"
)

// Observation is one ObjectStateObserved document: what one observer saw of
// one live object at one time. An empty Fields list is positive evidence that
// the object was observed matching its desired state.
type Observation struct {
	// Name is metadata.name, when the document has one.
	Name string
	// Source is the observer: cub-scout, kubernetes or file.
	Source string
	// Cluster is the kube context or cluster name the object lives in.
	Cluster string
	// Environment is set when the document names one; otherwise the repo
	// config maps Cluster to an environment.
	Environment string
	// ObservedAt is when the live object was read.
	ObservedAt time.Time
	// Object identifies the live object.
	Object ObjectKey
	// ResourceVersion is the object's resourceVersion when read, if known.
	ResourceVersion string
	// UID is the live object's metadata.uid when read, if known: an object
	// deleted and recreated under the same name has another.
	UID string
	// Evidence is what the observer said about how it compared, kept for
	// the receipt; zero when it said nothing.
	Evidence Evidence
	// Change says who made the live change, when that is known.
	Change Change
	// Fields are the fields whose live value differs from desired.
	Fields []Field
	// Origin is where the document was read (file:line, URL, document
	// index), for messages.
	Origin string
	// Trust is how far the observation itself (its live values, its time)
	// is believed: its source's trust ceiling. A document from a file, URL
	// or push has its source's ceiling; the kubernetes watch, which
	// backflow reads from the API server itself, is audit-log. Empty is
	// DefaultCeiling. A proof needs an observation trusted as far as the
	// attribution its receipt was accepted on (TrustLevel).
	Trust Attribution
}

// TrustLevel is o.Trust, DefaultCeiling when the source set none.
func (o Observation) TrustLevel() Attribution {
	if o.Trust == "" || !o.Trust.Valid() {
		return DefaultCeiling
	}
	return o.Trust
}

// Change is who made a live change, and how far that is believed.
type Change struct {
	// Actor is the identity that made the change; empty when unknown.
	Actor string
	// Groups are the actor's groups as the attributing source reported them.
	Groups []string
	// Attribution is how far the actor is believed: the claimed level
	// lowered to the source's trust ceiling.
	Attribution Attribution
	// Claimed is the attribution the document claimed before the ceiling.
	Claimed Attribution
	// At is when the change was made, if known.
	At time.Time
	// Intent is the reason the actor gave, if any.
	Intent string
	// Evidence says where the attribution came from (the audit event and
	// where it was read, or the managedFields entry), for the receipt;
	// empty when a document asserted it.
	Evidence string
}

// Field is one changed field of an observed object.
type Field struct {
	// Path is the Kubernetes field path (spec.replicas,
	// spec.template.spec.containers[0].image).
	Path string
	// Live is the live value. It is nil when Removed.
	Live any
	// Removed says the field is absent from the live object.
	Removed bool
	// Desired is what the observer compared against, valid when HasDesired.
	Desired any
	// HasDesired tells "desired: null" (true, Desired nil) from a document
	// that did not say what desired was (false).
	HasDesired bool
	// Manager is the field manager that last wrote the field, if known.
	Manager string
	// ManagerHint is an observer's representative manager for the object
	// (cub-scout's managerHint): evidence only, never taken as the writer,
	// so it satisfies neither ignoreManagers nor the audit join.
	ManagerHint string
	// Structural, when set, says why the difference is one of structure (a
	// list whose length differs, a map or list rendered as text) and not a
	// value: no value path can accept it.
	Structural string
	// ManagedAt is the time managedFields records for Manager's last
	// write, if known.
	ManagedAt time.Time
	// Subresource is the subresource Manager wrote through (scale,
	// status), as managedFields records it.
	Subresource string
	// By is who set this field, as the audit join (Attribute) found it;
	// nil until the join ran.
	By *Change
	// Cause is the observer's classification (cub-scout: manual-edit or
	// controller-drift), if any.
	Cause string
	// Textual says Live and Desired are an observer's text (cub-scout's
	// strings, as formatObjectSetDiffValue prints them) that must be read
	// per the typing table before comparing: use LiveLike, DesiredLike and
	// DesiredAgrees. A desired "-" is cub-scout's placeholder.
	Textual bool
	// Ambiguous, when set, says why the observer's text cannot tell what
	// the field holds live (cub-scout's "-": absent, null, "" or the string
	// "-"): the field differs from desired, but it is neither a removal nor
	// a value to write. Live is nil and Removed false.
	Ambiguous string
	// Reverted, when set, says the GitOps controller wrote over the
	// person's value before the object was read: Live is the person's
	// value (kept by the watch's TransitionLog), Reverted what the object
	// holds now. What is live now is Now().
	Reverted *Revert
	// StringValued says the object's kind fixes the field as a string (a
	// key of a Kubernetes map of strings: labels, annotations, a
	// ConfigMap's data): an observer's text there is that string, whatever
	// it spells (`map[a:c]`, `4`), unless the values file types it.
	StringValued bool
}

// LiveLike returns the live value typed like the value the values file holds
// at the mapped path (like; nil when there is none). Values that were typed
// at the source are returned as they are.
func (f Field) LiveLike(like any) any { return f.textLike(f.Live, like) }

// DesiredLike is LiveLike for the desired value. cub-scout's placeholder
// "-" is nothing (nil): it stands for absent, null, "" and "-" alike.
func (f Field) DesiredLike(like any) any {
	if f.DesiredPlaceholder() {
		return nil
	}
	return f.textLike(f.Desired, like)
}

// DesiredPlaceholder reports whether the observer's desired is cub-scout's
// placeholder "-", which stands for absent, null, "" and "-" alike.
func (f Field) DesiredPlaceholder() bool {
	s, ok := f.Desired.(string)
	return ok && f.Textual && cubNothing(s)
}

// DesiredAgrees reports whether v, the desired value the values files hold,
// is what the observer compared against: its desired typed like v equals
// v, or its text is what cub-scout prints for v: "-" for null, "" and the
// string "-" alike, and, where the field is not a string by its kind's
// schema, how %v prints the float64 of a number the values file holds as
// text (1e+06 for "1000000", never 1.10 for "1.1").
func (f Field) DesiredAgrees(v any) bool {
	if values.Equal(f.DesiredLike(v), v) {
		return true
	}
	if f.DesiredPlaceholder() {
		return rendersAsNothing(v)
	}
	s, ok := f.Desired.(string)
	if !f.Textual || !ok {
		return false
	}
	vs, isText := v.(string)
	return isText && !f.StringValued && cubSameNumber(s, vs)
}

func (f Field) textLike(v any, like any) any {
	s, ok := v.(string)
	if !f.Textual || !ok {
		return v
	}
	if like == nil && f.StringValued {
		return s
	}
	return values.ConvertLike(s, like)
}

// Trigger asks for an object to be looked at again: an observer said it
// drifted without saying which field or value.
type Trigger struct {
	// Object is the best-effort key of the object: apiVersion|Kind|namespace|name,
	// with empty segments for what the event did not say.
	Object ObjectKey
	// Cluster is the cluster the event came from, when it said.
	Cluster string
	// At is when the observer saw the drift.
	At time.Time
	// Message is the observer's free-text description.
	Message string
	// Owner is the controller the observer says applies the object
	// (cub-scout's owner.type: Flux, ArgoCD, Helm, ConfigHub, Native...).
	Owner string
	// OwnerName names the owner's object (a Kustomization, an Application).
	OwnerName string
	// Origin is where the event was read, for messages.
	Origin string
}

// Forget says an object was deleted live: what was pushed about it no
// longer describes anything (cub-scout's resource.deleted).
type Forget struct {
	// Object is the deleted object's key; the apiVersion may be empty.
	Object ObjectKey
	// Cluster is the cluster it was deleted from, when said.
	Cluster string
	// At is when the observer saw it gone.
	At time.Time
	// Origin is where the event was read, for messages.
	Origin string
}

// Notice is an event worth reporting that asks for no cycle: an object
// taken out of its GitOps controller's hands (cub-scout's ownership.changed
// to Native).
type Notice struct {
	// Object is the object's key; the apiVersion may be empty.
	Object ObjectKey
	// Cluster is the object's cluster, when said.
	Cluster string
	// At is when the observer saw it.
	At time.Time
	// Message says what happened.
	Message string
	// Origin is where the event was read, for messages.
	Origin string
}

// Evidence is what an observer reported about its comparison, beyond the
// fields: which render it compared against, which controller applies the
// object, and, for a cub-scout receipt, its anchor and attribution hints.
type Evidence struct {
	// Comparison is the kind of comparison (cub-scout: authored-fields-only).
	Comparison string
	// RenderKind, RenderReference and RenderDigest name the desired render
	// the observer compared against (cub-scout's source{kind,reference,digest}).
	RenderKind      string
	RenderReference string
	RenderDigest    string
	// Receipt is the cub-scout receipt the observation was read from: its
	// predicateName and fingerprint; empty otherwise.
	Receipt string
	// Anchor is the receipt's desired-state anchor, when it has one.
	Anchor *Anchor
	// Cause, ManagerHint and Managers are the receipt's attribution hints
	// (predicate.evidence.attribution): never an identity.
	Cause       string
	ManagerHint string
	Managers    []string
}

// Anchor is where a cub-scout receipt says desired state lives
// (predicate.spec.anchor).
type Anchor struct {
	Type     string
	RepoURL  string
	Revision string
	Path     string
	File     string
}

// String writes the anchor as repoUrl@revision:path.
func (a Anchor) String() string {
	s := a.RepoURL
	if a.Revision != "" {
		s += "@" + a.Revision
	}
	if p := a.File; p != "" {
		return s + ":" + p
	}
	if a.Path != "" {
		s += ":" + a.Path
	}
	return s
}

// ObjectKey identifies a Kubernetes object as apiVersion|Kind|namespace|name;
// a cluster-scoped object has an empty namespace.
type ObjectKey struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

// String is the key's canonical form, apiVersion|Kind|namespace|name.
func (k ObjectKey) String() string {
	return k.APIVersion + "|" + k.Kind + "|" + k.Namespace + "|" + k.Name
}

// Compare orders keys as their canonical forms order (k.String() against
// o.String()), without printing them: -1, 0 or +1. Sorted outputs keep the
// order they had when keys were carried as text.
func (k ObjectKey) Compare(o ObjectKey) int {
	a := [...]string{k.APIVersion, k.Kind, k.Namespace, k.Name}
	b := [...]string{o.APIVersion, o.Kind, o.Namespace, o.Name}
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		n := min(len(a[i]), len(b[i]))
		if c := strings.Compare(a[i][:n], b[i][:n]); c != 0 {
			return c
		}
		// One segment is a prefix of the other: the shorter is followed by
		// "|" (or by nothing, after the name), the longer by its next byte.
		if i == len(a)-1 {
			return cmp.Compare(len(a[i]), len(b[i]))
		}
		longer, sign := b[i], -1
		if len(a[i]) > len(b[i]) {
			longer, sign = a[i], 1
		}
		next := longer[n]
		switch {
		case next > '|':
			return sign
		case next < '|':
			return -sign
		}
		// A segment holding "|" (a pattern or an observer's partial key):
		// only the printed forms say which comes first.
		return strings.Compare(k.String(), o.String())
	}
	return 0
}

// MarshalText prints the key in its canonical form, so a key is written to
// JSON and YAML as the text it has always been.
func (k ObjectKey) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a key as ParseObjectKey does, refusing what is not
// one: text read back into a key is checked where it enters.
func (k *ObjectKey) UnmarshalText(text []byte) error {
	parsed, err := ParseObjectKey(string(text))
	if err != nil {
		return err
	}
	*k = parsed
	return nil
}

// IsSecret reports whether the object is a Secret, whose values never leave
// backflow. Any group's kind named Secret counts: redacting too much is safe.
func (k ObjectKey) IsSecret() bool { return IsSecretKind(k.Kind) }

// IsSecretKind reports whether kind names Secrets however an observer
// spells it: any case, singular or plural (secret, SECRET, Secrets).
func IsSecretKind(kind string) bool {
	return strings.EqualFold(kind, "Secret") || strings.EqualFold(kind, "Secrets")
}

// Segments is the key's four segments in order: apiVersion, Kind,
// namespace, name.
func (k ObjectKey) Segments() []string {
	return []string{k.APIVersion, k.Kind, k.Namespace, k.Name}
}

// ObjectKeyShapeError is a string that is not an object key or a pattern of
// one: it does not have the four segments apiVersion|Kind|namespace|name.
type ObjectKeyShapeError struct {
	// Key is the string as given.
	Key string
	// Segments is how many |-separated segments it has.
	Segments int
}

// Error implements error.
func (e *ObjectKeyShapeError) Error() string {
	return fmt.Sprintf("object key %q: want apiVersion|Kind|namespace|name, got %d segment(s)", e.Key, e.Segments)
}

// ParseObjectPattern reads a pattern of object keys, apiVersion|Kind|
// namespace|name with each segment a glob or literal, into a key holding
// the four segments as written. It is the one reading of the key syntax:
// it checks the shape (an *ObjectKeyShapeError otherwise), and what a
// segment may hold is its caller's to say (ParseObjectKey's for a key, the
// policy's, the repository config's and the watches' for their patterns).
func ParseObjectPattern(s string) (ObjectKey, error) {
	parts := strings.Split(s, "|")
	if len(parts) != 4 {
		return ObjectKey{}, &ObjectKeyShapeError{Key: s, Segments: len(parts)}
	}
	return ObjectKey{APIVersion: parts[0], Kind: parts[1], Namespace: parts[2], Name: parts[3]}, nil
}

// ParseObjectKey reads apiVersion|Kind|namespace|name. The apiVersion, kind
// and name are required; the namespace is empty for cluster-scoped objects.
func ParseObjectKey(s string) (ObjectKey, error) {
	k, err := ParseObjectPattern(s)
	if err != nil {
		return ObjectKey{}, err
	}
	if err := k.validate(); err != nil {
		return ObjectKey{}, fmt.Errorf("object key %q: %w", s, err)
	}
	return k, nil
}

func (k ObjectKey) validate() error {
	switch {
	case k.APIVersion == "":
		return fmt.Errorf("apiVersion is empty")
	case k.Kind == "":
		return fmt.Errorf("kind is empty")
	case k.Name == "":
		return fmt.Errorf("name is empty")
	}
	for _, s := range []string{k.APIVersion, k.Kind, k.Namespace, k.Name} {
		if strings.ContainsAny(s, "|\n\r\t ") {
			return fmt.Errorf("%q contains a separator or whitespace", s)
		}
	}
	return nil
}

// Redacted is what a Secret's values are replaced with.
const Redacted = "(redacted)"

// Redact returns o as it may be shown outside backflow: for a Secret, every
// live and desired value is replaced by Redacted (the paths stay, so a report
// can still say which keys changed). Other objects are returned unchanged.
// The Fields slice is copied, so o itself is never modified.
func Redact(o Observation) Observation {
	if !o.Object.IsSecret() {
		return o
	}
	fields := make([]Field, len(o.Fields))
	for i, f := range o.Fields {
		if !f.Removed && f.Ambiguous == "" {
			f.Live = Redacted
		}
		if f.HasDesired {
			f.Desired = Redacted
		}
		f.Textual = false
		fields[i] = f
	}
	o.Fields = fields
	return o
}
