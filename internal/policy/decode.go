package policy

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// maxNodes bounds the nodes the decoder visits, counting every expansion of
// an alias.
const maxNodes = 100_000

// policyFile is a policy file as the strict decoder reads it (yamlnode.Decode:
// unknown and duplicate keys, values of the wrong type, each named by its
// dotted path and line). What a decoder cannot say (required keys, the
// values a key may take, object keys and globs, bounds that contradict each
// other) is checked by policy after decoding.
type policyFile struct {
	APIVersion apiVersion `yaml:"apiVersion"`
	Kind       kind       `yaml:"kind"`
	Metadata   struct {
		Name        text            `yaml:"name"`
		Labels      map[string]text `yaml:"labels"`
		Annotations map[string]text `yaml:"annotations"`
	} `yaml:"metadata"`
	Spec *struct {
		Chart   text            `yaml:"chart"`
		Default defaultDecision `yaml:"default"`
		Rules   []ruleFile      `yaml:"rules"`
	} `yaml:"spec"`
}

type ruleFile struct {
	Role      text         `yaml:"role"`
	Reason    text         `yaml:"reason"`
	MayAccept []acceptFile `yaml:"mayAccept"`
}

// acceptFile is one mayAccept entry. Its bounds refuse a null: an empty
// minimum, pattern or oneOf would otherwise read as no bound at all, and
// the entry would authorize more than its author wrote.
type acceptFile struct {
	ValuePath    text       `yaml:"valuePath"`
	Field        text       `yaml:"field"`
	Objects      []text     `yaml:"objects"`
	Environments []text     `yaml:"environments"`
	AutoMerge    bool       `yaml:"autoMerge,notnull"`
	Minimum      *float64   `yaml:"minimum,notnull"`
	Maximum      *float64   `yaml:"maximum,notnull"`
	Pattern      *pattern   `yaml:"pattern,notnull"`
	OneOf        []any      `yaml:"oneOf,notnull"`
	AcceptFor    *acceptFor `yaml:"acceptFor,notnull"`
}

// acceptFor is an entry's longest acceptance, read as it is parsed so that
// a bad duration is reported in its place in the document.
type acceptFor struct {
	src string
	d   time.Duration
}

func (a *acceptFor) UnmarshalText(b []byte) error {
	a.src = string(b)
	d, err := ParseDuration(a.src)
	a.d = d
	return err
}

// text is a string of the policy: any scalar reads as written (role: 2024
// is the role "2024"), as a policy has always been read.
type text string

func (t *text) UnmarshalText(b []byte) error { *t = text(b); return nil }

// apiVersion, kind and defaultDecision are keys with a fixed set of values,
// checked as they are read so that a wrong one is reported in its place in
// the document. An empty one is left to the required check.
type (
	apiVersion      string
	kind            string
	defaultDecision string
)

func (v *apiVersion) UnmarshalText(b []byte) error {
	if *v = apiVersion(b); *v != "" && *v != SeedAPIVersion && *v != APIVersion {
		return fmt.Errorf("must be %s or %s, got %q", SeedAPIVersion, APIVersion, string(b))
	}
	return nil
}

func (k *kind) UnmarshalText(b []byte) error {
	if *k = kind(b); *k != "" && *k != Kind {
		return fmt.Errorf("must be %s, got %q", Kind, string(b))
	}
	return nil
}

func (d *defaultDecision) UnmarshalText(b []byte) error {
	if *d = defaultDecision(b); *d != "" && *d != "deny" {
		return fmt.Errorf(`must be "deny" (the policy is default-deny), got %q`, string(b))
	}
	return nil
}

func texts(in []text) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, t := range in {
		out[i] = string(t)
	}
	return out
}

// pattern is a pattern bound, compiled as it is read so that an invalid
// expression is reported in its place in the document.
type pattern struct {
	src string
	re  *regexp.Regexp
}

func (p *pattern) UnmarshalText(b []byte) error {
	p.src = string(b)
	re, err := compilePattern(p.src)
	p.re = re
	return err
}

// checker adds the errors found after decoding to the decoder's.
type checker struct {
	errs []FieldError
	// refused are the places the decoder could not read at all (a rule
	// that is not a mapping): nothing more is said about what is below.
	refused map[string]bool
}

func (c *checker) fail(path, format string, a ...any) {
	c.errs = append(c.errs, FieldError{Path: path, Message: fmt.Sprintf(format, a...)})
}

func (c *checker) required(s text, path string) {
	if s == "" {
		c.fail(path, "required")
	}
}

// policy builds the Policy f holds, adding to errs, the decoder's errors
// (in the order of the document), what is invalid across keys and what is
// missing.
func (f *policyFile) policy(errs []FieldError) (*Policy, []FieldError) {
	c := &checker{errs: errs, refused: map[string]bool{}}
	for _, e := range errs {
		if e.Message == "want a mapping" {
			c.refused[e.Path] = true
		}
	}
	p := &Policy{APIVersion: string(f.APIVersion), Kind: string(f.Kind), Name: string(f.Metadata.Name)}
	if s := f.Spec; s != nil {
		p.Chart, p.Default = string(s.Chart), string(s.Default)
		for i := range s.Rules {
			if r, ok := c.rule(&s.Rules[i], yamlnode.Index("spec.rules", i)); ok {
				p.Rules = append(p.Rules, r)
			}
		}
		if p.Default == "" {
			c.fail("spec.default", `required: must be "deny"`)
		}
	}
	if p.APIVersion == "" {
		c.fail("apiVersion", "required")
	}
	if p.Kind == "" {
		c.fail("kind", "required: must be %s", Kind)
	}
	if f.Spec == nil {
		c.fail("spec", "required")
	}
	return p, c.errs
}

func (c *checker) rule(rf *ruleFile, path string) (Rule, bool) {
	if c.refused[path] {
		return Rule{}, false
	}
	r := Rule{Role: string(rf.Role), Reason: string(rf.Reason)}
	for j := range rf.MayAccept {
		if a, ok := c.accept(&rf.MayAccept[j], yamlnode.Index(yamlnode.Join(path, "mayAccept"), j)); ok {
			r.MayAccept = append(r.MayAccept, a)
		}
	}
	c.required(rf.Role, yamlnode.Join(path, "role"))
	return r, true
}

func (c *checker) accept(af *acceptFile, path string) (Accept, bool) {
	if c.refused[path] {
		return Accept{}, false
	}
	a := Accept{
		ValuePath:    string(af.ValuePath),
		Field:        string(af.Field),
		Objects:      texts(af.Objects),
		Environments: texts(af.Environments),
		AutoMerge:    af.AutoMerge,
		Minimum:      af.Minimum,
		Maximum:      af.Maximum,
		OneOf:        af.OneOf,
	}
	if af.Pattern != nil {
		a.Pattern, a.pattern = af.Pattern.src, af.Pattern.re
	}
	if af.AcceptFor != nil {
		a.AcceptFor, a.AcceptForText = af.AcceptFor.d, af.AcceptFor.src
	}
	for i, o := range a.Objects {
		if msg := ObjectPatternError(o); msg != "" {
			c.fail(yamlnode.Index(yamlnode.Join(path, "objects"), i), "%s", msg)
		}
	}
	for i, e := range a.Environments {
		if msg := globError(e); msg != "" {
			c.fail(yamlnode.Index(yamlnode.Join(path, "environments"), i), "%s", msg)
		}
	}
	// valuePath is optional: an entry for objects of plain manifests or a
	// kustomization writes the field itself; the repo config's check says
	// whether an entry without one lists objects of a values unit.
	c.required(af.Field, yamlnode.Join(path, "field"))
	if len(a.Objects) == 0 {
		c.fail(yamlnode.Join(path, "objects"), "required: list at least one object")
	}
	if len(a.Environments) == 0 {
		c.fail(yamlnode.Join(path, "environments"), "required: list at least one environment")
	}
	if a.OneOf != nil && len(a.OneOf) == 0 {
		c.fail(yamlnode.Join(path, "oneOf"), "must list at least one value")
	}
	if a.Minimum != nil && a.Maximum != nil && *a.Minimum > *a.Maximum {
		c.fail(
			yamlnode.Join(path, "minimum"),
			"is greater than maximum (%s > %s)",
			values.Format(*a.Minimum),
			values.Format(*a.Maximum),
		)
	}
	if a.Pattern != "" && (a.Minimum != nil || a.Maximum != nil) {
		// pattern applies to strings and minimum/maximum to numbers: no value
		// could satisfy both, so the entry would silently authorize nothing.
		c.fail(yamlnode.Join(path, "pattern"), "cannot be combined with minimum or maximum")
	}
	return a, true
}

// compilePattern compiles a pattern bound so that it must match the whole
// value: an unanchored expression would let `[0-9]+Mi` accept any string that
// merely contains a size. The expression is checked alone first, so that a
// pattern like `a)|(b` cannot escape the anchoring group.
func compilePattern(p string) (*regexp.Regexp, error) {
	if p == "" {
		return nil, errors.New("must not be empty")
	}
	if _, err := regexp.Compile(p); err != nil {
		return nil, fmt.Errorf("invalid RE2 expression: %w", err)
	}
	re, err := regexp.Compile(`^(?:` + p + `)$`)
	if err != nil {
		return nil, fmt.Errorf("invalid RE2 expression: %w", err)
	}
	return re, nil
}
