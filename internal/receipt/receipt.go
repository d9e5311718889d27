package receipt

import (
	"bytes"
	"fmt"
	"io"
	"os"

	yaml "go.yaml.in/yaml/v3"
)

// APIVersions a receipt may declare: the seed's and backflow's own.
const (
	SeedAPIVersion = "helm-expt.confighub.com/v1alpha1"
	APIVersion     = "backflow.dev/v1alpha1"
	Kind           = "ReverseReconcileReceipt"
)

// Statuses of a receipt.
const (
	// StatusDesignExample is the seed's: the observation is a fixture and
	// the write-back manual.
	StatusDesignExample = "design-example"
	// StatusProposed: a write-back pull request is open.
	StatusProposed = "proposed"
	// StatusProven: merged, and live was re-observed equal to the new
	// desired value after the merge.
	StatusProven = "proven"
)

// Write-back methods.
const (
	MethodManualFixture       = "manual-fixture"
	MethodPullRequest         = "pull-request"
	MethodCubReverseReconcile = "cub-reverse-reconcile"
	// MethodConfigHubRevision: the accepted value is written into a
	// ConfigHub Unit as a new revision (newRevision names it), once the
	// pull request carrying the receipt merges.
	MethodConfigHubRevision = "confighub-revision"
)

// Trigger classes and authority decisions.
const (
	ClassAuthorized   = "authorized-live-change"
	ClassUnauthorized = "unauthorized-drift"
	DecisionAllow     = "allow"
	DecisionDeny      = "deny"
	ResultClosed      = "closed"
)

// MaxSize is the largest receipt file Parse accepts.
const MaxSize = 1 << 20

// Receipt is a ReverseReconcileReceipt. Field order is the seed's key order,
// which Marshal keeps.
type Receipt struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   Metadata `yaml:"metadata"`
	Spec       Spec     `yaml:"spec"`

	// decodeErrors are values of the wrong shape found while parsing; Verify
	// reports them as violations at their place.
	decodeErrors []Violation
}

// Metadata names the receipt.
type Metadata struct {
	Name string `yaml:"name"`
}

// Spec is the body of a receipt.
type Spec struct {
	Status      string      `yaml:"status"`
	Chart       string      `yaml:"chart"`
	Version     string      `yaml:"version"`
	Environment string      `yaml:"environment"`
	Unit        Unit        `yaml:"unit"`
	Trigger     Trigger     `yaml:"trigger"`
	Observation Observation `yaml:"observation"`
	Authority   Authority   `yaml:"authority"`
	Bounds      Bounds      `yaml:"bounds"`
	WriteBack   WriteBack   `yaml:"writeBack"`
	// Expiry is backflow's break glass: the acceptance lasts until
	// expiresAt, set by a policy entry's acceptFor or the intent's ask.
	// Absent on a permanent acceptance.
	Expiry *Expiry `yaml:"expiry,omitempty"`
	// Carried are the temporary acceptances of the receipt this one
	// replaced at its path (receipts are one per object) whose fields this
	// one leaves alone: they still last their term and are restored.
	Carried []Carried `yaml:"carried,omitempty"`
	// Render is backflow's render witness: the chart rendered with the
	// values before and after the write-back. Absent when the unit's chart
	// is not rendered.
	Render    *Render   `yaml:"render,omitempty"`
	RoundTrip RoundTrip `yaml:"roundTrip"`
	// NotClaimed are honesty markers: what the receipt does not claim.
	NotClaimed []string `yaml:"notClaimed"`
}

// Unit names the desired-state unit the receipt is about.
type Unit struct {
	Space         string `yaml:"space"`
	DesiredRender string `yaml:"desiredRender"`
}

// Trigger says what started the reverse reconcile and who.
type Trigger struct {
	Class  string `yaml:"class"`
	Actor  string `yaml:"actor"`
	Role   string `yaml:"role"`
	Intent string `yaml:"intent"`
	// At is an RFC 3339 time.
	At string `yaml:"at"`
	// Expired is backflow's extension on a receipt that restores desired
	// state when a temporary acceptance expired: the acceptance it ends.
	Expired *Expired `yaml:"expired,omitempty"`
}

// Observation is the live observation of the (first) changed field.
type Observation struct {
	Source     string `yaml:"source"`
	Predicate  string `yaml:"predicate"`
	ReceiptRef string `yaml:"receiptRef"`
	Object     string `yaml:"object"`
	Field      string `yaml:"field"`
	// ValuePath is absent for a field written as itself (a unit of plain
	// manifests or a kustomization): its changed field names writtenFile.
	ValuePath          string `yaml:"valuePath,omitempty"`
	LiveValue          Value  `yaml:"liveValue"`
	DesiredValueBefore Value  `yaml:"desiredValueBefore"`
	// UID is the live object's metadata.uid when it was observed, if the
	// observer said: a recreated object has another.
	UID string `yaml:"uid,omitempty"`
	// Evidence is what the observer reported beyond the values (the render
	// it compared against, cause and manager hints, a cub-scout receipt's
	// anchor and attribution), one statement each. Never an identity.
	Evidence []string `yaml:"evidence,omitempty"`
}

// Authority records the policy decision.
type Authority struct {
	PolicyRef   string `yaml:"policyRef"`
	Decision    string `yaml:"decision"`
	MatchedRule string `yaml:"matchedRule"`
}

// Bounds lists every changed field and which of them were unauthorized.
type Bounds struct {
	ChangedFields []ChangedField `yaml:"changedFields"`
	// UnauthorizedFieldsChanged lists "<object> <field>" for each changed
	// field the policy does not authorize.
	UnauthorizedFieldsChanged []string `yaml:"unauthorizedFieldsChanged"`
	WithinAuthorizedScope     *bool    `yaml:"withinAuthorizedScope"`
}

// ChangedField is one field that changed live.
type ChangedField struct {
	Object string `yaml:"object"`
	Field  string `yaml:"field"`
	// ValuePath is the values path written; absent where WrittenFile says
	// what was written instead.
	ValuePath string `yaml:"valuePath,omitempty"`
	From      Value  `yaml:"from"`
	To        Value  `yaml:"to"`
	// DesiredValueAfter is backflow's extension: the desired value written
	// back, which must equal To.
	DesiredValueAfter Value `yaml:"desiredValueAfter,omitempty"`
	// ValuesFile is backflow's extension: the values file the write-back
	// wrote the value to, one of unit.desiredRender's.
	ValuesFile string `yaml:"valuesFile,omitempty"`
	// WrittenFile is backflow's extension for a unit with no values: the
	// manifest or kustomization file the write-back edited, one of
	// unit.desiredRender's; WrittenPath is the path written in it (Helm's
	// --set syntax, the field itself in a plain manifest).
	WrittenFile string `yaml:"writtenFile,omitempty"`
	WrittenPath string `yaml:"writtenPath,omitempty"`
}

// WriteBack records how desired state was updated.
type WriteBack struct {
	Method            string `yaml:"method"`
	DesiredValueAfter Value  `yaml:"desiredValueAfter"`
	NewRevision       string `yaml:"newRevision"`
	// MergeCommit is the SHA of the merge commit, on proven receipts.
	MergeCommit string     `yaml:"mergeCommit,omitempty"`
	Provenance  Provenance `yaml:"provenance"`
}

// Provenance attributes the write-back.
type Provenance struct {
	Who string `yaml:"who"`
	// When is an RFC 3339 time.
	When      string `yaml:"when"`
	Operation string `yaml:"operation"`
	// Authority is the policy's path, equal to authority.policyRef.
	Authority string `yaml:"authority"`
	Intent    string `yaml:"intent"`
}

// RoundTrip is the witness that desired now equals what was observed.
type RoundTrip struct {
	DesiredAfterMatchesObserved *bool `yaml:"desiredAfterMatchesObserved"`
	// RenderedAfterMatchesObserved is backflow's extension, set with a
	// render section: the chart rendered with the edited values produces
	// the observed value of every accepted field, and changes nothing else.
	RenderedAfterMatchesObserved *bool  `yaml:"renderedAfterMatchesObserved,omitempty"`
	ResidualDrift                []any  `yaml:"residualDrift"`
	Result                       string `yaml:"result"`
}

// Render is the render witness: how the chart was rendered, the objects
// compared, and every rendered field the write-back changes.
type Render struct {
	// Chart and Version are the rendered chart's Chart.yaml name and version.
	Chart   string `yaml:"chart"`
	Version string `yaml:"version"`
	// Digest is sha256:<hex> of the chart as read.
	Digest string `yaml:"digest"`
	// Renderer is the library and its version.
	Renderer string `yaml:"renderer"`
	// Files are the repository files a kustomize build read (a
	// kustomization unit's render has no chart, release or Kubernetes
	// version; its digest is that of the files).
	Files       []string `yaml:"files,omitempty"`
	ReleaseName string   `yaml:"releaseName"`
	Namespace   string   `yaml:"namespace"`
	KubeVersion string   `yaml:"kubeVersion"`
	// ObjectsCompared are the keys of the rendered objects compared.
	ObjectsCompared []string `yaml:"objectsCompared"`
	// ChangedFields are the rendered fields that differ, before and after.
	ChangedFields []RenderedField `yaml:"changedFields"`
}

// RenderedField is one rendered field the write-back changes.
type RenderedField struct {
	Object string `yaml:"object"`
	Field  string `yaml:"field"`
	Before Value  `yaml:"before"`
	After  Value  `yaml:"after"`
}

// Value is a YAML value in a receipt (a number, string, bool, null, list or
// map) that may be absent: Set tells a missing key from an explicit null.
type Value struct {
	V   any
	Set bool
}

// ValueOf returns v as a present Value.
func ValueOf(v any) Value { return Value{V: v, Set: true} }

// MarshalYAML writes the value itself.
func (v Value) MarshalYAML() (any, error) { return v.V, nil }

// IsZero reports an absent value, so that omitempty leaves it out.
func (v Value) IsZero() bool { return !v.Set }

// Marshal writes r as YAML in the seed's key order, indented by two spaces:
// yaml.v3's encoding, written by hand when the receipt's strings and
// values allow (see emitter).
func Marshal(r *Receipt) ([]byte, error) {
	if out, ok := emitFast(r); ok {
		return out, nil
	}
	return marshalV3(r)
}

// marshalV3 is Marshal through yaml.v3's encoder.
func marshalV3(r *Receipt) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("error marshaling receipt %s: %w", r.Metadata.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("error marshaling receipt %s: %w", r.Metadata.Name, err)
	}
	return buf.Bytes(), nil
}

// Load reads and parses the receipt file at path; see Parse.
func Load(path string) (*Receipt, []Violation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("error reading %s: %w", path, err)
	}
	return Parse(path, data)
}
