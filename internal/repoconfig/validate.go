package repoconfig

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Parse reads a config file's bytes; file names it in errors. The returned
// config has the defaults applied. An invalid config is returned as nil and
// an *Error (wrapping ErrInvalid) that lists every invalid place.
func Parse(file string, data []byte) (*Config, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrUnreadable, file, MaxSize)
	}
	var c Config
	errs, unparseable := decodeFile(data, &c)
	if len(errs) == 0 {
		errs = c.validate()
	}
	if len(errs) > 0 {
		return nil, &Error{File: file, Errors: errs, Unparseable: unparseable}
	}
	c.applyDefaults()
	c.buildIndex()
	return &c, nil
}

// names of environments and units end up in branch names, so they are
// restricted to characters that are safe in a git ref and a file name.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)

func checkName(s string) error {
	if s == "" {
		return fmt.Errorf("required")
	}
	if !nameRE.MatchString(s) || strings.Contains(s, "..") {
		return fmt.Errorf("%q: want letters, digits, '.', '_' and '-' (starting and ending with a letter or digit)", s)
	}
	return nil
}

// loginRE is GitHub's login syntax: alphanumerics and single hyphens, not at
// either end, at most 39 characters.
var loginRE = regexp.MustCompile(`^[A-Za-z0-9](?:-?[A-Za-z0-9]){0,38}$`)

// teamRE is a team slug, optionally prefixed with its organisation.
var teamRE = regexp.MustCompile(`^(?:[A-Za-z0-9](?:-?[A-Za-z0-9]){0,38}/)?[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// kubeVersion is a Kubernetes version as .Capabilities.KubeVersion has it.
var kubeVersion = regexp.MustCompile(`^v?[0-9]+\.[0-9]+(\.[0-9]+)?$`)

// exactVersion is a chart version that names one release (semantic
// versioning, no range), so that every fetch of it is the same archive.
var exactVersion = regexp.MustCompile(
	`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`,
)

type checker struct{ errs []FieldError }

func (k *checker) add(path string, err error) {
	if err != nil {
		k.errs = append(k.errs, FieldError{Path: path, Message: err.Error()})
	}
}

func (k *checker) addf(path, format string, a ...any) {
	k.errs = append(k.errs, FieldError{Path: path, Message: fmt.Sprintf(format, a...)})
}

func (c *Config) validate() []FieldError {
	k := &checker{}
	switch c.Version {
	case Version:
	case 0:
		k.addf("version", "required (version: 1)")
	default:
		k.addf("version", "unsupported version %d: want 1", c.Version)
	}
	if c.Policy == "" {
		k.addf("policy", "required: the policy file's path in the repository")
	} else {
		k.add("policy", checkRepoPath(c.Policy))
	}
	receipts := c.Receipts.Dir
	if receipts == "" {
		receipts = DefaultReceiptsDir
	} else if err := checkRepoPath(receipts); err != nil {
		k.add("receipts.dir", err)
	}
	c.validateEnvironments(k)
	c.validateUnits(k, receipts)
	c.validateOwnManifests(k)
	if checkRepoPath(receipts) == nil {
		k.add("receipts.dir", c.checkReceiptsDir(receipts))
	}
	c.validateRoles(k)
	for _, actor := range slices.Sorted(maps.Keys(c.Identities)) {
		login := c.Identities[actor]
		if actor == "" {
			k.addf("identities", "an actor name is empty")
		}
		if !loginRE.MatchString(login) {
			k.addf("identities."+actor, "%q is not a GitHub login", login)
		}
	}
	pr := c.PullRequests
	if pr.BranchPrefix != "" {
		k.add("pullRequests.branchPrefix", checkBranchPrefix(pr.BranchPrefix))
	}
	for i, l := range pr.Labels {
		if strings.TrimSpace(l) == "" || len(l) > 50 {
			k.addf(fmt.Sprintf("pullRequests.labels[%d]", i), "want a label name of 1 to 50 characters")
		}
	}
	for i, r := range pr.Reviewers {
		if !loginRE.MatchString(r) {
			k.addf(fmt.Sprintf("pullRequests.reviewers[%d]", i), "%q is not a GitHub login", r)
		}
	}
	for i, t := range pr.TeamReviewers {
		if !teamRE.MatchString(t) {
			k.addf(fmt.Sprintf("pullRequests.teamReviewers[%d]", i), "%q is not a team slug (team or org/team)", t)
		}
	}
	switch c.AutoMerge.Method {
	case "", "squash", "merge", "rebase":
	default:
		k.addf("autoMerge.method", "%q: want squash, merge or rebase", c.AutoMerge.Method)
	}
	for i, f := range c.IgnoreFields {
		if _, err := CompileFieldPattern(f); err != nil {
			k.add(fmt.Sprintf("ignoreFields[%d]", i), err)
		}
	}
	for i, m := range c.IgnoreManagers {
		if strings.TrimSpace(m) == "" {
			k.addf(fmt.Sprintf("ignoreManagers[%d]", i), "empty manager name")
		}
	}
	if c.FollowUp.GracePeriod.Duration < 0 {
		k.addf("followUp.gracePeriod", "must not be negative")
	}
	switch c.Mode {
	case "", ModeWriteBack, ModeObserveOnly:
	default:
		k.addf("mode", "%q: want write-back or observe-only", c.Mode)
	}
	return k.errs
}

func (c *Config) validateEnvironments(k *checker) {
	owner := map[string]string{}
	for _, env := range slices.Sorted(maps.Keys(c.Environments)) {
		p := "environments." + env
		k.add(p, checkName(env))
		e := c.Environments[env]
		e.Hold.validate(k, p+".hold")
		if len(e.Clusters) == 0 {
			k.addf(p+".clusters", "required: at least one cluster")
		}
		for i, cl := range e.Clusters {
			cp := fmt.Sprintf("%s.clusters[%d]", p, i)
			switch {
			case strings.TrimSpace(cl) == "" || strings.TrimSpace(cl) != cl:
				k.addf(cp, "empty or padded cluster name")
			case owner[cl] == env:
				k.addf(cp, "cluster %s is listed twice", cl)
			case owner[cl] != "":
				// A cluster in two environments would make the
				// environment of an observation ambiguous.
				k.addf(cp, "cluster %s is already in environment %s", cl, owner[cl])
			default:
				owner[cl] = env
			}
		}
	}
}

func (c *Config) validateUnits(k *checker, receipts string) {
	type claim struct {
		unit    int
		pattern string
		segs    []string
	}
	byEnv := map[string][]claim{}
	names := map[string]int{}
	// readAs keeps how the first unit reading a file reads it: a file is a
	// plain values file for every unit or the same manifest root for every
	// unit, so a write-back, the shared-file rule and the diff check all
	// read it one way.
	type reading struct {
		unit int
		root *ValuesRoot
	}
	readAs := map[string]reading{}
	for i, u := range c.Units {
		p := fmt.Sprintf("units[%d]", i)
		k.add(p+".name", checkName(u.Name))
		if u.Environment == "" {
			k.addf(p+".environment", "required")
		} else if _, ok := c.Environments[u.Environment]; !ok {
			k.addf(p+".environment", "%q is not in environments", u.Environment)
		}
		if prev, dup := names[u.Environment+"/"+u.Name]; dup && u.Name != "" {
			k.addf(p+".name", "unit %s is already defined in environment %s by units[%d]", u.Name, u.Environment, prev)
		} else {
			names[u.Environment+"/"+u.Name] = i
		}
		c.validateSource(k, p, &u, receipts)
		u.Hold.validate(k, p+".hold")
		c.checkWritable(k, p+".valuesFiles", u.ValuesFiles, receipts)
		if r := u.ValuesRoot; r != nil {
			if kind, name, ok := strings.Cut(r.Document, "/"); !ok || kind == "" || name == "" || strings.Contains(name, "/") {
				k.addf(p+".valuesRoot.document", "%q: want Kind/name, such as HelmRelease/redis", r.Document)
			}
			if r.Path == "" {
				k.addf(p+".valuesRoot.path", "required, such as spec.values")
			} else if _, err := yamlnode.ParsePath(r.Path); err != nil {
				k.add(p+".valuesRoot.path", err)
			}
		}
		for j, f := range u.ValuesFiles {
			root := u.RootOf(f)
			if prev, ok := readAs[f]; ok && !sameRoot(prev.root, root) {
				k.addf(
					fmt.Sprintf("%s.valuesFiles[%d]", p, j),
					"%s is read as %s here but as %s by units[%d] (%s): every unit reads a file the same way",
					f,
					describeRoot(root),
					describeRoot(prev.root),
					prev.unit,
					c.Units[prev.unit].Name,
				)
				continue
			}
			if _, ok := readAs[f]; !ok {
				readAs[f] = reading{unit: i, root: root}
			}
		}
		if len(u.Objects) == 0 {
			k.addf(p+".objects", "required: the object keys the unit renders")
		}
		var mine []claim
		for j, o := range u.Objects {
			op := fmt.Sprintf("%s.objects[%d]", p, j)
			if err := checkObjectPattern(o); err != nil {
				k.add(op, err)
				continue
			}
			key, _ := observe.ParseObjectPattern(o) // checkObjectPattern read it
			segs := key.Segments()
			for _, other := range byEnv[u.Environment] {
				if segmentsOverlap(segs, other.segs) {
					k.addf(op, "%q overlaps %q of units[%d] (%s) in environment %s: an object must belong to one unit",
						o, other.pattern, other.unit, c.Units[other.unit].Name, u.Environment)
				}
			}
			// Patterns of one unit may overlap each other: only claims by
			// different units conflict.
			mine = append(mine, claim{unit: i, pattern: o, segs: segs})
		}
		byEnv[u.Environment] = append(byEnv[u.Environment], mine...)
		if u.Chart != nil {
			if u.Chart.Name == "" {
				k.addf(p+".chart.name", "required when chart is given")
			}
			if u.Chart.Path != "" {
				k.add(p+".chart.path", checkRepoPath(u.Chart.Path))
			}
			u.Chart.validateSource(k, p+".chart")
			if u.Rendered() && u.ReleaseNamespace() == "" {
				k.addf(
					p+".chart.namespace",
					"required: the unit's objects do not all name one namespace, so the chart's release namespace must be given",
				)
			}
			if u.Chart.KubeVersion != "" && !kubeVersion.MatchString(u.Chart.KubeVersion) {
				k.addf(p+".chart.kubeVersion", "%q is not a Kubernetes version such as v1.34.0", u.Chart.KubeVersion)
			}
		}
	}
}

// validateSource checks that u names exactly one store of desired state
// and that its manifests or kustomization paths may be read and written.
func (c *Config) validateSource(k *checker, p string, u *Unit, receipts string) {
	named := 0
	for _, n := range []bool{len(u.ValuesFiles) > 0, len(u.Manifests) > 0, u.Kustomization != "", u.ConfigHub != nil} {
		if n {
			named++
		}
	}
	switch {
	case named == 0:
		k.addf(p+".valuesFiles", "required: at least one values file (or manifests, a kustomization, or a confighub unit)")
	case named > 1:
		k.addf(p, "names more than one of valuesFiles, manifests, kustomization and confighub: "+
			"a unit's desired state is in one place")
	}
	if u.Documents() && u.ValuesRoot != nil {
		k.addf(p+".valuesRoot",
			"only with valuesFiles: a unit of manifests, a kustomization or a confighub unit has no values")
	}
	if u.Documents() && u.Chart != nil {
		k.addf(p+".chart", "only with valuesFiles: a unit of manifests, a kustomization or a confighub unit renders no chart")
	}
	if u.ConfigHub != nil {
		c.validateConfigHub(k, p+".confighub", u)
	}
	c.checkWritable(k, p+".manifests", u.Manifests, receipts)
	if u.Kustomization != "" {
		fp := p + ".kustomization"
		if err := checkRepoPath(u.Kustomization); err != nil {
			k.add(fp, err)
		} else {
			k.add(fp, c.checkValuesFile(u.Kustomization, receipts))
		}
	}
}

// validateOwnManifests refuses manifests that units of two environments
// both read: a plain manifest has no override to write instead, so one
// environment's change would be another's (share a kustomize base).
func (c *Config) validateOwnManifests(k *checker) {
	within := func(a, b string) bool { return a == b || strings.HasPrefix(a, b+"/") }
	for i, u := range c.Units {
		for oi, o := range c.Units[:i] {
			if u.Kustomization != "" && o.Kustomization == u.Kustomization && o.Environment != u.Environment {
				k.addf(
					fmt.Sprintf("units[%d].kustomization", i),
					"%s is also units[%d]'s (%s) in environment %s: an overlay belongs to one environment (share a base instead)",
					u.Kustomization,
					oi,
					o.Name,
					o.Environment,
				)
			}
		}
		for j, e := range u.Manifests {
			for oi, o := range c.Units[:i] {
				for _, oe := range o.Manifests {
					if o.Environment != u.Environment && (within(e, oe) || within(oe, e)) {
						k.addf(
							fmt.Sprintf("units[%d].manifests[%d]", i, j),
							"%s is also read by units[%d] (%s) in environment %s as %s: plain manifests belong to one environment (use a "+
								"kustomize base and an overlay per environment)",
							e,
							oi,
							o.Name,
							o.Environment,
							oe,
						)
					}
				}
			}
		}
	}
}

// checkWritable checks a unit's list of paths at key: each stays in the
// repository, is listed once and is a file backflow may write.
func (c *Config) checkWritable(k *checker, key string, paths []string, receipts string) {
	seen := map[string]bool{}
	for j, f := range paths {
		fp := fmt.Sprintf("%s[%d]", key, j)
		if err := checkRepoPath(f); err != nil {
			k.add(fp, err)
			continue
		}
		if seen[f] {
			k.addf(fp, "%s is listed twice", f)
		}
		seen[f] = true
		k.add(fp, c.checkValuesFile(f, receipts))
	}
}

func sameRoot(a, b *ValuesRoot) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func describeRoot(r *ValuesRoot) string {
	if r == nil {
		return "a plain values file"
	}
	return fmt.Sprintf("the %s of %s", r.Path, r.Document)
}

func (c *Config) validateRoles(k *checker) {
	for _, name := range slices.Sorted(maps.Keys(c.Roles)) {
		p := "roles." + name
		if strings.TrimSpace(name) == "" {
			k.addf("roles", "a role name is empty")
		}
		r := c.Roles[name]
		for i, u := range r.Users {
			if strings.TrimSpace(u) == "" {
				k.addf(fmt.Sprintf("%s.users[%d]", p, i), "empty user name")
			}
		}
		for i, g := range r.Groups {
			if strings.TrimSpace(g) == "" {
				k.addf(fmt.Sprintf("%s.groups[%d]", p, i), "empty group name")
			}
		}
		if r.Attribution != nil && len(r.Attribution) == 0 {
			k.addf(p+".attribution", "empty: omit the key for the default [audit-log]")
		}
		for i, a := range r.Attribution {
			ap := fmt.Sprintf("%s.attribution[%d]", p, i)
			switch {
			case a == observe.AttributionUnknown:
				// Nobody can be authorized on the strength of nothing.
				k.addf(ap, "unknown cannot be accepted: want asserted, managed-fields, admission or audit-log")
			case !a.Valid():
				k.addf(ap, "%q: want asserted, managed-fields, admission or audit-log", string(a))
			}
		}
	}
}

// checkRepoPath says why p cannot name a file inside the repository: it
// must be relative, clean, with forward slashes, and never reach out of the
// repository or into .git.
func checkRepoPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty path")
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%q: contains a NUL byte", p)
	case strings.Contains(p, `\`):
		return fmt.Errorf("%q: use / between path elements, not \\", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q: must be relative to the repository root", p)
	case len(p) >= 2 && p[1] == ':':
		return fmt.Errorf("%q: must be relative to the repository root", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return fmt.Errorf("%q: must stay inside the repository (no ..)", p)
		}
		if strings.EqualFold(seg, ".git") {
			return fmt.Errorf("%q: must not be inside .git", p)
		}
	}
	if path.Clean(p) != p || p == "." {
		return fmt.Errorf("%q: not a clean path (want %s)", p, path.Clean(p))
	}
	return nil
}

// codeOwners are the places GitHub reads CODEOWNERS from.
var codeOwners = []string{"CODEOWNERS", ".github/CODEOWNERS", "docs/CODEOWNERS"}

// checkValuesFile says why the bot must never write to p. Paths compare
// case-insensitively, so a case-insensitive checkout cannot be used to slip
// past a rule.
func (c *Config) checkValuesFile(p, receiptsDir string) error {
	lp := strings.ToLower(p)
	switch {
	case lp == strings.ToLower(Path):
		return fmt.Errorf("%s is the repo config, which backflow never writes", p)
	case c.Policy != "" && lp == strings.ToLower(c.Policy):
		return fmt.Errorf("%s is the policy, which backflow never writes", p)
	case under(lp, strings.ToLower(receiptsDir)):
		return fmt.Errorf("%s is under receipts.dir (%s)", p, receiptsDir)
	case under(lp, ".github/workflows"):
		return fmt.Errorf("%s is a GitHub workflow, which backflow never writes", p)
	}
	for _, co := range codeOwners {
		if lp == strings.ToLower(co) {
			return fmt.Errorf("%s is CODEOWNERS, which backflow never writes", p)
		}
	}
	return nil
}

func under(p, dir string) bool {
	return dir != "" && strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// checkBranchPrefix refuses what git does not allow in a ref name.
func checkBranchPrefix(p string) error {
	bad := func(why string) error { return fmt.Errorf("%q: not usable in a branch name: %s", p, why) }
	switch {
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, "-") || strings.HasPrefix(p, "."):
		return bad("starts with /, - or .")
	case strings.Contains(p, "..") || strings.Contains(p, "//") || strings.Contains(p, "@{") || strings.Contains(p, "/."):
		return bad("contains .., //, /. or @{")
	case strings.ContainsAny(p, " ~^:?*[\\\x7f"):
		return bad("contains a space or one of ~^:?*[\\")
	}
	for _, r := range p {
		if r < 0x20 {
			return bad("contains a control character")
		}
	}
	return nil
}

func (c *Config) applyDefaults() {
	if c.PullRequests.BranchPrefix == "" {
		c.PullRequests.BranchPrefix = DefaultBranchPrefix
	}
	if c.Receipts.Dir == "" {
		c.Receipts.Dir = DefaultReceiptsDir
	}
	if c.AutoMerge.Method == "" {
		c.AutoMerge.Method = DefaultMergeMethod
	}
	if c.FollowUp.GracePeriod.Duration == 0 {
		c.FollowUp.GracePeriod.Duration = DefaultGracePeriod
	}
	if c.Mode == "" {
		c.Mode = ModeWriteBack
	}
	for name, r := range c.Roles {
		if r.Attribution == nil {
			r.Attribution = append([]observe.Attribution(nil), DefaultAttribution...)
			c.Roles[name] = r
		}
	}
}

func (c *Config) buildIndex() {
	x := &index{envOf: map[string]string{}, claims: map[claimKey][]int{}, wild: map[string][]int{}}
	for name, e := range c.Environments {
		for _, cl := range e.Clusters {
			x.envOf[cl] = name
		}
	}
	for i, u := range c.Units {
		for _, o := range u.Objects {
			k, _ := observe.ParseObjectPattern(o) // validate read it
			if strings.Contains(k.Kind+k.Namespace, "*") {
				x.wild[u.Environment] = appendOnce(x.wild[u.Environment], i)
				continue
			}
			key := claimKey{u.Environment, k.Kind, k.Namespace}
			x.claims[key] = appendOnce(x.claims[key], i)
		}
	}
	for _, f := range c.IgnoreFields {
		if p, err := CompileFieldPattern(f); err == nil {
			x.fields = append(x.fields, p)
		}
	}
	c.index = x
}

func appendOnce(list []int, i int) []int {
	if n := len(list); n > 0 && list[n-1] == i {
		return list
	}
	return append(list, i)
}

// validateSource checks where a chart is read from: at most one of path,
// repository and oci; a remote chart with an exact version.
func (c *Chart) validateSource(k *checker, p string) {
	set := 0
	for _, v := range []string{c.Path, c.Repository, c.OCI} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		k.addf(p, "give at most one of path, repository and oci")
	}
	if c.Repository != "" {
		u, err := url.Parse(c.Repository)
		switch {
		case strings.HasPrefix(c.Repository, "oci://"):
			k.addf(p+".repository", "%q is an OCI reference: give it as oci, with the chart's name", c.Repository)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			k.addf(p+".repository", "%q is not an http or https URL", c.Repository)
		case u.User != nil:
			k.addf(p+".repository", "%q holds credentials: the repo config is not the place for them", c.Repository)
		}
		if c.RepoChart() == "" {
			k.addf(p+".name", "%q does not end in a chart name to find in the repository's index", c.Name)
		}
	}
	if c.OCI != "" {
		rest, ok := strings.CutPrefix(c.OCI, "oci://")
		host, repoPath, _ := strings.Cut(rest, "/")
		switch {
		case !ok:
			k.addf(p+".oci", "%q does not start with oci://", c.OCI)
		case host == "" || repoPath == "" || strings.ContainsAny(rest, "@ \t") || strings.Contains(repoPath, ":") ||
			strings.HasSuffix(repoPath, "/"):
			k.addf(
				p+".oci",
				"%q is not an OCI reference oci://host/path/chart without tag or digest (the tag is version)",
				c.OCI,
			)
		}
	}
	if c.Remote() && !exactVersion.MatchString(c.Version) {
		if c.Version == "" {
			k.addf(p+".version", "required with repository or oci")
		} else {
			k.addf(p+".version", "%q is not an exact chart version such as 23.1.1 (a fetched chart is pinned)", c.Version)
		}
	}
}
