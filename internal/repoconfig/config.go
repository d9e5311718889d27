package repoconfig

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/invopop/jsonschema"
)

// Path is where the repo config lives in the repository, read from the
// default branch only.
const Path = ".github/backflow.yaml"

// Version is the only config version this package reads.
const Version = 1

// Defaults applied to keys the file leaves out.
const (
	DefaultBranchPrefix = "backflow/"
	DefaultReceiptsDir  = ".backflow/receipts"
	DefaultMergeMethod  = "squash"
	DefaultGracePeriod  = 10 * time.Minute
)

// Modes a repository may be in.
const (
	// ModeWriteBack proposes authorized changes as pull requests.
	ModeWriteBack = "write-back"
	// ModeObserveOnly reports decisions and writes nothing.
	ModeObserveOnly = "observe-only"
)

// DefaultAttribution is what a role accepts when it does not say: only an
// authenticated identity from the audit log.
var DefaultAttribution = []observe.Attribution{observe.AttributionAuditLog}

// Config is a repository's .github/backflow.yaml.
type Config struct {
	Version                 int                    `yaml:"version" json:"version" jsonschema:"required,enum=1" jsonschema_description:"Config format version; must be 1."`
	Policy                  string                 `yaml:"policy" json:"policy" jsonschema:"required" jsonschema_description:"Path of the ReverseReconcilePolicy file in the repository, e.g. .github/reverse-reconcile-policy.yaml."`
	RequireClusterAgreement bool                   `yaml:"requireClusterAgreement" json:"requireClusterAgreement,omitempty" jsonschema_description:"Default for every environment: a change is accepted only when all of the environment's clusters report the same live value. Default false."`
	Environments            map[string]Environment `yaml:"environments" json:"environments,omitempty" jsonschema_description:"Environment name -> the clusters (kube contexts) it is made of. A cluster belongs to at most one environment."`
	Units                   []Unit                 `yaml:"units" json:"units,omitempty" jsonschema_description:"Deployable units: the values files that render a set of objects in one environment."`
	Roles                   map[string]Role        `yaml:"roles" json:"roles,omitempty" jsonschema_description:"Role name (as the policy's rules name it) -> the users and groups that hold it and the attribution levels accepted for them."`
	Identities              map[string]string      `yaml:"identities" json:"identities,omitempty" jsonschema_description:"Actor (cluster identity) -> GitHub login, credited with Co-authored-by on write-back commits."`
	PullRequests            PullRequests           `yaml:"pullRequests" json:"pullRequests,omitempty" jsonschema_description:"How write-back pull requests are opened."`
	AutoMerge               AutoMerge              `yaml:"autoMerge" json:"autoMerge,omitempty" jsonschema_description:"Merging of write-backs that the policy pre-authorizes and an audit-log identity made."`
	Receipts                Receipts               `yaml:"receipts" json:"receipts,omitempty" jsonschema_description:"Where receipts are committed."`
	IgnoreFields            []string               `yaml:"ignoreFields" json:"ignoreFields,omitempty" jsonschema_description:"Kubernetes field paths that are never drift. Globs: * matches one path segment (or a run of characters within one), ** any number of segments, [*] any list index."`
	IgnoreManagers          []string               `yaml:"ignoreManagers" json:"ignoreManagers,omitempty" jsonschema_description:"Field managers whose writes are never drift (autoscalers, operators)."`
	FollowUp                FollowUp               `yaml:"followUp" json:"followUp,omitempty" jsonschema_description:"Re-observation of objects after a write-back is merged."`
	Observations            ObservationBounds      `yaml:"observations" json:"observations,omitempty" jsonschema_description:"How far observations are believed in time and against each other."`
	DriftReport             DriftReport            `yaml:"driftReport" json:"driftReport,omitempty" jsonschema_description:"Reporting of unauthorized drift."`
	Mode                    string                 `yaml:"mode" json:"mode,omitempty" jsonschema:"enum=write-back,enum=observe-only" jsonschema_description:"write-back (default) proposes authorized changes; observe-only reports every decision and writes nothing."`
	Paused                  bool                   `yaml:"paused" json:"paused,omitempty" jsonschema_description:"When true backflow does nothing for this repository."`

	// index answers the planner's per-observation questions without
	// scanning every unit; Parse builds it, and a Config built by hand
	// works without it.
	index *index
}

type index struct {
	envOf map[string]string // cluster -> environment
	// claims maps an environment, kind and namespace to the units with a
	// pattern whose kind and namespace segments have no glob; wild lists,
	// per environment, the units with any other pattern.
	claims map[claimKey][]int
	wild   map[string][]int
	fields []FieldPattern
}

// claimKey is what the index of claims is keyed on: the object's kind and
// namespace in an environment (a pattern's apiVersion and name may hold
// globs, and are matched unit by unit).
type claimKey struct{ env, kind, namespace string }

// Environment is a set of clusters that share desired state.
type Environment struct {
	Clusters                []string `yaml:"clusters" json:"clusters" jsonschema:"required,minItems=1" jsonschema_description:"Cluster names (kube contexts) that make up the environment."`
	RequireClusterAgreement *bool    `yaml:"requireClusterAgreement" json:"requireClusterAgreement,omitempty" jsonschema_description:"Overrides the top-level requireClusterAgreement for this environment."`
	Hold                    *Hold    `yaml:"hold" json:"hold,omitempty" jsonschema_description:"Opts every unit of the environment into holding the forward controller off an accepted live change until its merge is applied (a unit's own hold replaces it). Needs write access to the held objects' annotations."`
}

// Unit is a set of objects rendered from values files, applied from plain
// manifests or built from a kustomization, in one environment.
type Unit struct {
	Name          string      `yaml:"name" json:"name" jsonschema:"required" jsonschema_description:"Unit name, unique within its environment; names the write-back branch <branchPrefix><environment>/<name> and the receipt's unit.space."`
	Environment   string      `yaml:"environment" json:"environment" jsonschema:"required" jsonschema_description:"The environment (a key of environments) the unit is deployed to."`
	ValuesFiles   []string    `yaml:"valuesFiles" json:"valuesFiles,omitempty" jsonschema:"minItems=1" jsonschema_description:"Values files in Helm's override order (later files override earlier ones). A write-back edits the last file unless the path is defined only in an earlier one. With valuesRoot the last file is the manifest holding the inline values. A unit names exactly one of valuesFiles, manifests and kustomization."`
	Manifests     []string    `yaml:"manifests" json:"manifests,omitempty" jsonschema:"minItems=1" jsonschema_description:"Plain Kubernetes manifests the unit's objects are applied from: files, or folders read as Flux's kustomize-controller and Argo CD's directory source read them (every YAML document of every .yaml, .yml and .json file, recursively, entries whose name starts with a dot skipped). A field is written at the same field of the document with the object's apiVersion, kind, namespace and name; policy entries need no valuePath."`
	Kustomization string      `yaml:"kustomization" json:"kustomization,omitempty" jsonschema_description:"Folder of the kustomization (the environment's overlay) the unit's objects are built from. A field is written where kustomize says its built value comes from; policy entries need no valuePath."`
	ConfigHub     *ConfigHub  `yaml:"confighub" json:"confighub,omitempty" jsonschema_description:"A ConfigHub Unit (toolchain Kubernetes/YAML) holding the unit's rendered manifests, named by its space's and its own slug: the accepted field is written at the same field of the Unit's document for the object, as a new revision once the pull request carrying the receipt merges. Policy entries need no valuePath."`
	ValuesRoot    *ValuesRoot `yaml:"valuesRoot" json:"valuesRoot,omitempty" jsonschema_description:"Set when the unit's last values file is a manifest (a Flux HelmRelease, an Argo CD Application) whose inline values are read, after the files before it, as Flux merges spec.values after valuesFrom and Argo CD valuesObject after valueFiles."`
	Objects       []string    `yaml:"objects" json:"objects" jsonschema:"required,minItems=1" jsonschema_description:"Object keys apiVersion|Kind|namespace|name that the unit renders; * matches any run of characters within one |-separated segment."`
	Chart         *Chart      `yaml:"chart" json:"chart,omitempty" jsonschema_description:"The chart the unit renders: named in receipts, and rendered by the render witness when it has a path, a repository or an OCI reference."`
	Hold          *Hold       `yaml:"hold" json:"hold,omitempty" jsonschema_description:"Opts the unit into holding the forward controller off an accepted live change until its merge is applied; replaces its environment's hold."`
}

// ConfigHub names a ConfigHub Unit by slugs.
type ConfigHub struct {
	Space string `yaml:"space" json:"space" jsonschema:"required" jsonschema_description:"Slug of the ConfigHub space holding the unit."`
	Unit  string `yaml:"unit" json:"unit" jsonschema:"required" jsonschema_description:"Slug of the ConfigHub unit within that space."`
}

// StoreRef names a unit's desired state in a store outside the repository
// that writes revisions once the pull request carrying the receipt merges:
// the store, as the wiring knows it, and the store's own name of the
// document. The planner and the lifecycle know a store only by this name
// and by what its reader says of the document (plan.Head).
type StoreRef struct {
	// Store is the store's kind: StoreConfigHub.
	Store string
	// Name is the store's own name of the document: space/unit for a
	// ConfigHub Unit.
	Name string
}

// StoreConfigHub is the kind of store of a ConfigHub Unit.
const StoreConfigHub = "confighub"

// Path is the name under which a snapshot holds the document's bytes and
// a receipt names it as its writtenFile: not a repository path (it cannot
// be one), so it never collides with a file.
func (r StoreRef) Path() string { return r.Store + "://" + r.Name }

// String is store:name, as messages name the document.
func (r StoreRef) String() string { return r.Store + ":" + r.Name }

// StoreRef is u's desired store outside the repository, nil for a unit
// whose desired state is in the repository.
func (u *Unit) StoreRef() *StoreRef {
	if u.ConfigHub != nil {
		return &StoreRef{Store: StoreConfigHub, Name: u.ConfigHub.Space + "/" + u.ConfigHub.Unit}
	}
	return nil
}

// ConfigHubOf is the ConfigHub Unit r names, false when r names none (its
// store is not ConfigHub, or its name is not space/unit).
func ConfigHubOf(r StoreRef) (ConfigHub, bool) {
	space, unit, ok := strings.Cut(r.Name, "/")
	if r.Store != StoreConfigHub || !ok || space == "" || unit == "" || strings.Contains(unit, "/") {
		return ConfigHub{}, false
	}
	return ConfigHub{Space: space, Unit: unit}, true
}

// ValuesRoot locates values inside a manifest.
type ValuesRoot struct {
	Document string `yaml:"document" json:"document" jsonschema:"required" jsonschema_description:"The manifest holding the values, as Kind/name (HelmRelease/redis), chosen among the documents of the unit's last values file."`
	Path     string `yaml:"path" json:"path" jsonschema:"required" jsonschema_description:"Path of the values inside that manifest, in Helm's --set syntax: spec.values (Flux), spec.source.helm.valuesObject (Argo CD)."`
}

// Chart names the chart a unit renders. With a path, a repository or an
// OCI reference the chart is rendered: every write-back of the unit must
// pass the render witness. Without one it only names the chart in receipts.
type Chart struct {
	Name        string `yaml:"name" json:"name,omitempty" jsonschema_description:"Chart name, e.g. bitnami/redis; receipts name it. With repository, its last /-separated segment is the chart's name in the repository's index. Required."`
	Version     string `yaml:"version" json:"version,omitempty" jsonschema_description:"Chart version; receipts name it. Required, an exact version (no range), with repository or oci."`
	Path        string `yaml:"path" json:"path,omitempty" jsonschema_description:"Folder of the chart in the repository (with its dependencies under charts/, or pinned by its Chart.lock and fetched). When set, backflow renders the chart before and after each write-back and writes back only when the rendering changes exactly the accepted fields to exactly the observed values (the render witness)."`
	Repository  string `yaml:"repository" json:"repository,omitempty" jsonschema_description:"URL (http or https) of the Helm chart repository (its index.yaml) that serves the chart; the chart is fetched, cached by digest and rendered by the render witness. At most one of path, repository and oci."`
	OCI         string `yaml:"oci" json:"oci,omitempty" jsonschema_description:"OCI reference of the chart without its tag, e.g. oci://registry-1.docker.io/bitnamicharts/redis; the chart is pulled at version, cached by digest and rendered by the render witness. At most one of path, repository and oci."`
	ReleaseName string `yaml:"releaseName" json:"releaseName,omitempty" jsonschema_description:"Release name the GitOps controller installs the chart as (.Release.Name). Default: the unit's name."`
	Namespace   string `yaml:"namespace" json:"namespace,omitempty" jsonschema_description:"Namespace the chart is installed in (.Release.Namespace). Default: the namespace the unit's objects name, when they all name the same one without a glob."`
	KubeVersion string `yaml:"kubeVersion" json:"kubeVersion,omitempty" jsonschema_description:"Kubernetes version the chart is rendered for (.Capabilities.KubeVersion), e.g. v1.34.0. Default v1.34.0."`
}

// Source is how the unit's desired state is stored.
type Source int

// The stores a unit's desired state can be in.
const (
	// SourceValues: Helm values files (valuesFiles).
	SourceValues Source = iota
	// SourceManifests: plain manifests (manifests).
	SourceManifests
	// SourceKustomize: a kustomization folder (kustomization).
	SourceKustomize
	// SourceStore: a store outside the repository that writes revisions
	// (StoreRef: a ConfigHub Unit, confighub).
	SourceStore
)

// Source is how u's desired state is stored.
func (u *Unit) Source() Source {
	switch {
	case len(u.Manifests) > 0:
		return SourceManifests
	case u.Kustomization != "":
		return SourceKustomize
	case u.StoreRef() != nil:
		return SourceStore
	}
	return SourceValues
}

// Documents reports a unit whose fields map to themselves: plain manifests,
// a kustomization or a ConfigHub Unit, where a policy entry needs no
// valuePath.
func (u *Unit) Documents() bool { return u.Source() != SourceValues }

// RootOf is where u reads the values of file, one of its values files: its
// valuesRoot for its last file (the manifest whose inline values Flux and
// Argo CD merge after every values file), nil for a plain values file.
func (u *Unit) RootOf(file string) *ValuesRoot {
	if u.ValuesRoot != nil && len(u.ValuesFiles) > 0 && u.ValuesFiles[len(u.ValuesFiles)-1] == file {
		return u.ValuesRoot
	}
	return nil
}

// RootOf is the valuesRoot the units reading file read it with, nil when
// they read it as a plain values file (validation makes every unit read a
// file the same way).
func (c *Config) RootOf(file string) *ValuesRoot {
	for i := range c.Units {
		if r := c.Units[i].RootOf(file); r != nil {
			return r
		}
	}
	return nil
}

// Rendered reports that the unit's chart is rendered: it names a path, a
// repository or an OCI reference.
func (u *Unit) Rendered() bool { return u.Chart != nil && (u.Chart.Path != "" || u.Chart.Remote()) }

// Remote reports that the chart is fetched: from a chart repository or an
// OCI registry.
func (c *Chart) Remote() bool { return c.Repository != "" || c.OCI != "" }

// RepoChart is the chart's name in its repository's index: the last
// /-separated segment of its name.
func (c *Chart) RepoChart() string { return c.Name[strings.LastIndex(c.Name, "/")+1:] }

// Source names where the chart is read: its path, or its repository or OCI
// reference with its version.
func (c *Chart) Source() string {
	switch {
	case c.Path != "":
		return c.Path
	case c.OCI != "":
		return c.OCI + ":" + c.Version
	case c.Repository != "":
		return strings.TrimSuffix(c.Repository, "/") + "/" + c.RepoChart() + "@" + c.Version
	}
	return ""
}

// ReleaseName is the release name the unit's chart is rendered as.
func (u *Unit) ReleaseName() string {
	if u.Chart != nil && u.Chart.ReleaseName != "" {
		return u.Chart.ReleaseName
	}
	return u.Name
}

// ReleaseNamespace is the namespace the unit's chart is rendered in: the
// chart's namespace, else the one namespace every object pattern names
// without a glob, else empty.
func (u *Unit) ReleaseNamespace() string {
	if u.Chart != nil && u.Chart.Namespace != "" {
		return u.Chart.Namespace
	}
	ns := ""
	for _, o := range u.Objects {
		k, err := observe.ParseObjectPattern(o)
		if err != nil || k.Namespace == "" || strings.Contains(k.Namespace, "*") || (ns != "" && ns != k.Namespace) {
			return ""
		}
		ns = k.Namespace
	}
	return ns
}

// Role is who holds a role and how far their identity must be believed.
type Role struct {
	Users       []string              `yaml:"users" json:"users,omitempty" jsonschema_description:"Actors (cluster user names) that hold the role."`
	Groups      []string              `yaml:"groups" json:"groups,omitempty" jsonschema_description:"Groups whose members hold the role."`
	Attribution []observe.Attribution `yaml:"attribution" json:"attribution,omitempty" jsonschema:"minItems=1" jsonschema_description:"Attribution levels accepted for the role's changes (a set, not a minimum): asserted, managed-fields, admission, audit-log. Default [audit-log]."`
}

// PullRequests says how write-back pull requests look.
type PullRequests struct {
	BranchPrefix  string   `yaml:"branchPrefix" json:"branchPrefix,omitempty" jsonschema_description:"Prefix of write-back branches, which are named <branchPrefix><environment>/<unit>. Default backflow/."`
	Labels        []string `yaml:"labels" json:"labels,omitempty" jsonschema_description:"Labels added to write-back pull requests."`
	Reviewers     []string `yaml:"reviewers" json:"reviewers,omitempty" jsonschema_description:"GitHub logins asked to review."`
	TeamReviewers []string `yaml:"teamReviewers" json:"teamReviewers,omitempty" jsonschema_description:"Team slugs asked to review."`
	Draft         bool     `yaml:"draft" json:"draft,omitempty" jsonschema_description:"Open write-back pull requests as drafts."`
}

// AutoMerge says whether and how pre-authorized write-backs are merged.
type AutoMerge struct {
	Enabled bool   `yaml:"enabled" json:"enabled,omitempty" jsonschema_description:"Merge write-backs whose every field is pre-authorized (autoMerge: true in the policy) and whose actor is attributed by the audit log. Default false."`
	Method  string `yaml:"method" json:"method,omitempty" jsonschema:"enum=squash,enum=merge,enum=rebase" jsonschema_description:"Merge method: squash (default), merge or rebase."`
}

// Receipts says where receipts are committed.
type Receipts struct {
	Dir string `yaml:"dir" json:"dir,omitempty" jsonschema_description:"Folder for receipts, one YAML file per write-back. Default .backflow/receipts."`
}

// FollowUp says when merged write-backs are checked.
type FollowUp struct {
	GracePeriod Duration `yaml:"gracePeriod" json:"gracePeriod,omitempty" jsonschema_description:"How long after a merge to wait before re-observing the objects (a Go duration: 30s, 10m, 1h). Default 10m."`
}

// ObservationBounds bounds observations in time: one dated too far ahead
// of backflow's clock or too long ago is refused, and a lower-trust one
// does not replace a higher-trust one of the same object while that is
// fresh.
type ObservationBounds struct {
	MaxSkew   Duration `yaml:"maxSkew" json:"maxSkew,omitempty" jsonschema_description:"How far ahead of backflow's clock an observation may be dated (a Go duration). Default 5m."`
	MaxAge    Duration `yaml:"maxAge" json:"maxAge,omitempty" jsonschema_description:"How old an observation may be (a Go duration). Default 8760h (365 days)."`
	Freshness Duration `yaml:"freshness" json:"freshness,omitempty" jsonschema_description:"How long an observation of higher trust (attribution) outranks a newer one of lower trust of the same object (a Go duration). Default 1h."`
}

// Defaults of ObservationBounds.
const (
	DefaultMaxSkew   = 5 * time.Minute
	DefaultMaxAge    = 365 * 24 * time.Hour
	DefaultFreshness = time.Hour
)

// Bounds returns the observation bounds with defaults for what is unset.
func (c *Config) Bounds() (maxSkew, maxAge, freshness time.Duration) {
	b := c.Observations
	return cmp.Or(b.MaxSkew.Duration, DefaultMaxSkew), cmp.Or(b.MaxAge.Duration, DefaultMaxAge),
		cmp.Or(b.Freshness.Duration, DefaultFreshness)
}

// DriftReport says how unauthorized drift is reported.
type DriftReport struct {
	TrackingIssue bool `yaml:"trackingIssue" json:"trackingIssue,omitempty" jsonschema_description:"Keep one tracking issue listing unauthorized drift. Default false."`
}

// Duration is a time.Duration written as a Go duration string (10m, 1h30m).
type Duration struct{ time.Duration }

// UnmarshalText reads a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("want a duration such as 30s, 10m or 1h")
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as Go does (10m0s).
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// JSONSchema describes a Duration as the string it is written as.
func (Duration) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Pattern: `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`}
}
