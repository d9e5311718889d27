package repoconfig

import "regexp"

// confighubSlug is ConfigHub's pattern for a Slug (its API description's
// Unit.Slug and Space.Slug): a slug that does not match it names nothing.
var confighubSlug = regexp.MustCompile(`^[A-Za-z0-9]([\-_.A-Za-z0-9]*[A-Za-z0-9])?$`)

// validateConfigHub checks u's confighub entry: both slugs given, each
// one ConfigHub could have made, and no other unit naming the same Unit
// (one environment's authority never changes what another's reads).
func (c *Config) validateConfigHub(k *checker, p string, u *Unit) {
	ch := u.ConfigHub
	for i := range c.Units {
		o := &c.Units[i]
		if o.ConfigHub != nil && *o.ConfigHub == *ch && (o.Name != u.Name || o.Environment != u.Environment) {
			k.addf(p, "ConfigHub unit %s/%s is also the desired state of units[%d] (%s in %s): "+
				"a Unit belongs to one unit of one environment", ch.Space, ch.Unit, i, o.Name, o.Environment)
		}
	}
	for _, f := range []struct{ key, v string }{{"space", ch.Space}, {"unit", ch.Unit}} {
		switch {
		case f.v == "":
			k.addf(p+"."+f.key, "required: the slug of the ConfigHub %s", f.key)
		case len(f.v) > 128 || !confighubSlug.MatchString(f.v):
			k.addf(p+"."+f.key, "%q is not a ConfigHub slug (letters, digits, '-', '_' and '.', "+
				"starting and ending with a letter or digit, at most 128)", f.v)
		}
	}
}

// ConfigHubUnits are the units whose desired state is a ConfigHub Unit.
func (c *Config) ConfigHubUnits() []*Unit {
	var out []*Unit
	for i := range c.Units {
		if c.Units[i].ConfigHub != nil {
			out = append(out, &c.Units[i])
		}
	}
	return out
}
