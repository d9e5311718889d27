package repoconfig

import (
	"errors"
	"strings"
	"testing"
)

// chUnit replaces base's values files with a confighub entry.
func chUnit(entry string) string {
	return strings.Replace(base, "    valuesFiles: [envs/prod/values.yaml]\n", entry, 1)
}

func TestConfigHubUnit(t *testing.T) {
	c, err := Parse(Path, []byte(chUnit("    confighub: {space: prod, unit: redis}\n")))
	if err != nil {
		t.Fatal(err)
	}
	u := &c.Units[0]
	ref := u.StoreRef()
	if u.Source() != SourceStore || !u.Documents() || ref == nil || ref.Path() != "confighub://prod/redis" {
		t.Fatalf("unit %+v: source %v, ref %v", u.ConfigHub, u.Source(), ref)
	}
	if ch, ok := ConfigHubOf(*ref); !ok || ch != *u.ConfigHub {
		t.Fatalf("ConfigHubOf(%v) = %v, %v", *ref, ch, ok)
	}
	if got := c.ConfigHubUnits(); len(got) != 1 || got[0].Name != "redis" {
		t.Fatalf("ConfigHubUnits: %v", got)
	}
}

func TestConfigHubOf(t *testing.T) {
	tests := []struct {
		why string
		ref StoreRef
		ok  bool
	}{
		{"a Unit's reference", StoreRef{Store: StoreConfigHub, Name: "prod/redis"}, true},
		{"another store's name is not a Unit's", StoreRef{Store: "other", Name: "prod/redis"}, false},
		{"a name without a space", StoreRef{Store: StoreConfigHub, Name: "redis"}, false},
		{"an empty space", StoreRef{Store: StoreConfigHub, Name: "/redis"}, false},
		{"an empty unit", StoreRef{Store: StoreConfigHub, Name: "prod/"}, false},
		{"a third segment", StoreRef{Store: StoreConfigHub, Name: "prod/redis/x"}, false},
	}
	for _, tt := range tests {
		if _, ok := ConfigHubOf(tt.ref); ok != tt.ok {
			t.Errorf("%s: ConfigHubOf(%v) ok = %v, want %v", tt.why, tt.ref, ok, tt.ok)
		}
	}
}

func TestConfigHubUnitErrors(t *testing.T) {
	tests := []struct{ why, config, want string }{
		{"the space is required", chUnit("    confighub: {unit: redis}\n"), "units[0].confighub.space: required"},
		{"the unit is required", chUnit("    confighub: {space: prod}\n"), "units[0].confighub.unit: required"},
		{"a slug ConfigHub could not have made", chUnit("    confighub: {space: prod, unit: \"re dis\"}\n"), `units[0].confighub.unit: "re dis" is not a ConfigHub slug`},
		{"a slug that would escape a where expression", chUnit("    confighub: {space: \"p' OR 'x\", unit: redis}\n"), "units[0].confighub.space: \"p' OR 'x\" is not a ConfigHub slug"},
		{"unknown keys are errors", chUnit("    confighub: {space: prod, unit: redis, id: x}\n"), "units[0].confighub.id: unknown key"},
		{"a confighub unit and values files", chUnit("    valuesFiles: [envs/prod/values.yaml]\n    confighub: {space: prod, unit: redis}\n"), "units[0]: names more than one of valuesFiles, manifests, kustomization and confighub"},
		{"a confighub unit has no chart", chUnit("    confighub: {space: prod, unit: redis}\n    chart: {name: redis, version: 1.0.0}\n"), "units[0].chart: only with valuesFiles"},
		{"two units may not share a Unit", strings.Replace(chUnit("    confighub: {space: prod, unit: redis}\n"), "roles:",
			"  - name: other\n    environment: dev\n    confighub: {space: prod, unit: redis}\n    objects: [\"apps/v1|StatefulSet|other|*\"]\nroles:", 1),
			"units[1].confighub: ConfigHub unit prod/redis is also the desired state of units[0] (redis in prod)"},
	}
	for _, tt := range tests {
		_, err := Parse(Path, []byte(tt.config))
		if err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want an invalid config", tt.why, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n got %s\nwant %s", tt.why, err, tt.want)
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.HasPrefix(line, Path+": ") {
				t.Errorf("%s: error line %q does not name the file", tt.why, line)
			}
		}
	}
}
