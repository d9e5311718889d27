package demo

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Person is someone who changes the live cluster by hand, as the API
// server's audit log records them.
type Person struct {
	// Actor is the authenticated user name.
	Actor string
	// Groups are the user's groups.
	Groups []string
	// Intent is the reason the person gave (a change annotation, a ticket).
	Intent string
	// Manager is the field manager their client writes with; empty means
	// kubectl.
	Manager string
}

// Cluster is a simulated live Kubernetes cluster: objects with fields, each
// field with its live value, the value the GitOps controller last applied
// (desired) and the field manager that wrote it last. People change it by
// hand (with audit-log attribution), the GitOps controller force-applies
// the desired state rendered from values files, and Observe reports what
// differs, as an observer of the cluster would.
type Cluster struct {
	// Name is the cluster (kube context) name.
	Name string
	// Environment is the environment the cluster belongs to.
	Environment string
	// GitOpsManager is the field manager of the forward apply.
	GitOpsManager string

	now func() time.Time

	mu      sync.Mutex
	objects []*object
	version int
}

type object struct {
	key    observe.ObjectKey
	fields []*field
	// change is the person's change that the audit log attributes the
	// object's drift to: the newest manual write.
	change *observe.Change
}

type field struct {
	path    string
	live    any
	desired any
	manager string
}

// NewCluster returns an empty cluster whose clock is now.
func NewCluster(name, environment, gitopsManager string, now func() time.Time) *Cluster {
	return &Cluster{Name: name, Environment: environment, GitOpsManager: gitopsManager, now: now}
}

// Add creates an object as the GitOps controller renders it: every field
// live at its desired value, written by the GitOps manager.
func (c *Cluster) Add(key string, fields map[string]any) error {
	k, err := observe.ParseObjectKey(key)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.find(key) != nil {
		return fmt.Errorf("cluster %s: object %s exists", c.Name, key)
	}
	o := &object{key: k}
	paths := make([]string, 0, len(fields))
	for p := range fields {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		o.fields = append(o.fields, &field{path: p, live: fields[p], desired: fields[p], manager: c.GitOpsManager})
	}
	c.objects = append(c.objects, o)
	slices.SortFunc(c.objects, func(a, b *object) int { return a.key.Compare(b.key) })
	c.version++
	return nil
}

func (c *Cluster) find(key string) *object {
	for _, o := range c.objects {
		if o.key.String() == key {
			return o
		}
	}
	return nil
}

func (o *object) field(p string) *field {
	for _, f := range o.fields {
		if f.path == p {
			return f
		}
	}
	return nil
}

// Scale sets spec.replicas by hand, as `kubectl scale` does.
func (c *Cluster) Scale(key string, replicas int, by Person) error {
	return c.Set(key, "spec.replicas", replicas, by)
}

// Set changes one field by hand. The audit log records the person, their
// groups and the time; the field's manager becomes theirs.
func (c *Cluster) Set(key, fieldPath string, value any, by Person) error {
	if by.Actor == "" {
		return fmt.Errorf("cluster %s: a change needs an actor", c.Name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.find(key)
	if o == nil {
		return fmt.Errorf("cluster %s: no object %s", c.Name, key)
	}
	f := o.field(fieldPath)
	if f == nil {
		return fmt.Errorf("cluster %s: object %s has no field %s", c.Name, key, fieldPath)
	}
	manager := by.Manager
	if manager == "" {
		manager = "kubectl"
	}
	f.live, f.manager = value, manager
	o.change = &observe.Change{Actor: by.Actor, Groups: slices.Clone(by.Groups), Attribution: observe.AttributionAuditLog,
		Claimed: observe.AttributionAuditLog, At: c.now().UTC(), Intent: by.Intent}
	c.version++
	return nil
}

// Get returns a field's live value.
func (c *Cluster) Get(key, fieldPath string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.find(key)
	if o == nil {
		return nil, false
	}
	f := o.field(fieldPath)
	if f == nil {
		return nil, false
	}
	return f.live, true
}

// Applied is one field the forward apply wrote.
type Applied struct {
	Object observe.ObjectKey
	Field  string
	// From is the live value before, To the value applied.
	From, To any
}

// ForwardApply force-applies the desired state the chart rendered as the
// GitOps controller: objects are the rendered objects by key (as
// render.Chart.Render returns them), and every field of every object the
// cluster holds goes live at its rendered value, owned by the GitOps
// manager, which is how a live change that is not in Git gets reverted. It
// returns the fields whose live value changed. An object or field of the
// cluster that the rendering lacks is an error, and nothing is applied.
func (c *Cluster) ForwardApply(objects map[string]map[string]any) ([]Applied, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	desired := map[*field]any{}
	for _, o := range c.objects {
		key := o.key.String()
		obj, ok := objects[key]
		if !ok {
			return nil, fmt.Errorf("cluster %s: the rendering has no object %s", c.Name, key)
		}
		for _, f := range o.fields {
			v, ok := FieldValue(obj, f.path)
			if !ok {
				return nil, fmt.Errorf("cluster %s: the rendering of %s has no field %s", c.Name, key, f.path)
			}
			desired[f] = v
		}
	}
	var out []Applied
	for _, o := range c.objects {
		for _, f := range o.fields {
			f.desired = desired[f]
			if !values.Equal(f.live, f.desired) {
				out = append(out, Applied{Object: o.key, Field: f.path, From: f.live, To: f.desired})
			}
			f.live, f.manager = f.desired, c.GitOpsManager
		}
		o.change = nil
	}
	c.version++
	return out, nil
}

// FieldValue reads a field of a rendered object by its path in the
// observer's spelling (spec.template.spec.containers[0].image).
func FieldValue(obj map[string]any, fieldPath string) (any, bool) {
	segs, err := yamlnode.ParsePath(fieldPath)
	if err != nil {
		return nil, false
	}
	var cur any = obj
	for _, s := range segs {
		switch x := cur.(type) {
		case map[string]any:
			if s.IsIndex {
				return nil, false
			}
			v, ok := x[s.Key]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			if !s.IsIndex || s.Index < 0 || s.Index >= len(x) {
				return nil, false
			}
			cur = x[s.Index]
		default:
			return nil, false
		}
	}
	return cur, true
}

// Observe reports every object as an observer would at the cluster's
// current time: the fields whose live value differs from desired, with
// their manager, and the person the audit log attributes the change to.
// An object that matches desired is reported with no fields, which is
// positive evidence that it does.
func (c *Cluster) Observe() []observe.Observation {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := c.now().UTC()
	out := make([]observe.Observation, 0, len(c.objects))
	for _, o := range c.objects {
		obs := observe.Observation{
			Source: observe.SourceKubernetes, Cluster: c.Name, Environment: c.Environment, ObservedAt: at,
			Object: o.key, ResourceVersion: fmt.Sprint(c.version), Fields: []observe.Field{}, Trust: observe.AttributionAuditLog,
			Change: observe.Change{Attribution: observe.AttributionUnknown, Claimed: observe.AttributionUnknown},
		}
		for _, f := range o.fields {
			if values.Equal(f.live, f.desired) {
				continue
			}
			obs.Fields = append(
				obs.Fields,
				observe.Field{Path: f.path, Live: f.live, Desired: f.desired, HasDesired: true, Manager: f.manager},
			)
		}
		if len(obs.Fields) > 0 && o.change != nil {
			obs.Change = *o.change
			obs.Change.Groups = slices.Clone(o.change.Groups)
		}
		out = append(out, obs)
	}
	return out
}

// EncodeObservations writes observations as native ObjectStateObserved
// documents, a JSON array, as an observer hands them to backflow. The
// claimed attribution is written; the reader lowers it to its source's
// trust ceiling.
func EncodeObservations(obs []observe.Observation) ([]byte, error) {
	type fieldDoc struct {
		Field   string `json:"field"`
		Live    any    `json:"live,omitempty"`
		Removed bool   `json:"removed,omitempty"`
		Desired *any   `json:"desired,omitempty"`
		Manager string `json:"manager,omitempty"`
		Cause   string `json:"cause,omitempty"`
	}
	type changeDoc struct {
		Actor       string   `json:"actor,omitempty"`
		Groups      []string `json:"groups,omitempty"`
		Attribution string   `json:"attribution,omitempty"`
		At          string   `json:"at,omitempty"`
		Intent      string   `json:"intent,omitempty"`
	}
	type specDoc struct {
		Source          string     `json:"source"`
		Cluster         string     `json:"cluster"`
		Environment     string     `json:"environment,omitempty"`
		ObservedAt      string     `json:"observedAt"`
		Object          string     `json:"object"`
		ResourceVersion string     `json:"resourceVersion,omitempty"`
		Change          *changeDoc `json:"change,omitempty"`
		Fields          []fieldDoc `json:"fields"`
	}
	type doc struct {
		APIVersion string  `json:"apiVersion"`
		Kind       string  `json:"kind"`
		Spec       specDoc `json:"spec"`
	}
	docs := make([]doc, 0, len(obs))
	for _, o := range obs {
		s := specDoc{
			Source:          o.Source,
			Cluster:         o.Cluster,
			Environment:     o.Environment,
			ObservedAt:      o.ObservedAt.UTC().Format(time.RFC3339Nano),
			Object:          o.Object.String(),
			ResourceVersion: o.ResourceVersion,
			Fields:          []fieldDoc{},
		}
		if o.Change.Actor != "" {
			ch := &changeDoc{
				Actor:       o.Change.Actor,
				Groups:      o.Change.Groups,
				Attribution: string(o.Change.Claimed),
				Intent:      o.Change.Intent,
			}
			if !o.Change.At.IsZero() {
				ch.At = o.Change.At.UTC().Format(time.RFC3339Nano)
			}
			s.Change = ch
		}
		for _, f := range o.Fields {
			fd := fieldDoc{Field: f.Path, Removed: f.Removed, Manager: f.Manager, Cause: f.Cause}
			if !f.Removed {
				fd.Live = f.Live
				if f.Live == nil {
					return nil, fmt.Errorf("observation of %s: field %s: a null live value cannot be written", o.Object, f.Path)
				}
			}
			if f.HasDesired {
				d := f.Desired
				fd.Desired = &d
			}
			s.Fields = append(s.Fields, fd)
		}
		docs = append(docs, doc{APIVersion: observe.APIVersion, Kind: observe.Kind, Spec: s})
	}
	out, err := json.MarshalIndent(docs, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding observations: %w", err)
	}
	return append(out, '\n'), nil
}
