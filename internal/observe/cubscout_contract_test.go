package observe

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/values"
)

// The fixtures in testdata/cub-scout are shaped as cub-scout's code writes
// them (SOURCES.md): trace-diffs as json.MarshalIndent prints a
// traceDiffObservation, its v0.4.0 outputs as their encoders print them.

func cubFixture(t *testing.T, name string) Result {
	t.Helper()
	return ParseBytes(mustRead(t, filepath.Join("testdata", "cub-scout", name)), Options{Name: name, Ceiling: AttributionAuditLog})
}

func oneObservation(t *testing.T, res Result) Observation {
	t.Helper()
	if len(res.Errors) != 0 || len(res.Observations) != 1 {
		t.Fatalf("want one observation and no error, got %d and %v", len(res.Observations), res.Errors)
	}
	return res.Observations[0]
}

func fieldAt(o Observation, path string) (Field, bool) {
	i := slices.IndexFunc(o.Fields, func(f Field) bool { return f.Path == path })
	if i < 0 {
		return Field{}, false
	}
	return o.Fields[i], true
}

func TestCubScoutFloatRenderedFieldIsNoChange(t *testing.T) {
	o := oneObservation(t, cubFixture(t, "trace-diff.float-rendered.json"))
	// why: desired 1073741824 decoded as a float64 prints 1.073741824e+09,
	// the live quantity "1073741824": one number, no change, and taken for
	// one it was credited to the controller's apply by the audit join.
	if _, ok := fieldAt(o, "spec.template.spec.containers[0].resources.limits.memory"); ok {
		t.Errorf("the untouched memory limit is a field of the observation: %+v", o.Fields)
	}
	if len(o.Fields) != 7 {
		t.Fatalf("want alice's seven edits, got %d fields: %+v", len(o.Fields), o.Fields)
	}
	// why: 1e+06 is the desired 1000000; the field still changed (live 2000000).
	m, ok := fieldAt(o, "spec.minReadySeconds")
	if !ok || !m.DesiredAgrees(1000000) || !values.Equal(m.LiveLike(1000000), 2000000) {
		t.Errorf("minReadySeconds read as %+v", m)
	}

	audit := ParseAuditEvents(mustRead(t, filepath.Join("testdata", "cub-scout", "audit.float-rendered.jsonl")), "audit.float-rendered.jsonl")
	if len(audit.Errors) != 0 || len(audit.Events) != 3 {
		t.Fatalf("audit log: %d events, %v", len(audit.Events), audit.Errors)
	}
	joined := Attribute(o, audit.Events)
	for _, f := range joined.Fields {
		if f.By == nil || f.By.Actor != "alice" || f.By.Attribution != AttributionAuditLog {
			t.Errorf("%s attributed to %+v, want alice at audit-log", f.Path, f.By)
		}
	}
	// why: with the memory limit credited to flux, the object had no one
	// actor and all seven of alice's edits were denied actor-unknown.
	if joined.Change.Actor != "alice" || joined.Change.Attribution != AttributionAuditLog {
		t.Errorf("the observation's change is %+v, want alice at audit-log", joined.Change)
	}
}

func TestCubSameValue(t *testing.T) {
	tests := []struct {
		why           string
		desired, live string
		under         scalarMap
		same          bool
	}{
		{"a float64's %v and an integer's digits", "1.073741824e+09", "1073741824", inQuantityMap, true},
		{"1e+06 is 1000000", "1e+06", "1000000", notInScalarMap, true},
		{"one text for a number and a quantity", "1", "1", inQuantityMap, true},
		{"another number", "1e+06", "2000000", notInScalarMap, false},
		{"1 prints as 1", "1", "1", notInScalarMap, true},
		{"a fraction's float64 prints as its live float64", "0.5", "0.5", notInScalarMap, true},
		{"a float64 beyond 2^53 prints rounded, as the desired was decoded", "9.007199254740992e+15", "9007199254740993",
			inQuantityMap, true},
		{"5e-01 is no float64's %v: live 0.5 is another text", "0.5", "5e-01", notInScalarMap, false},
		{"and the other way round", "5e-01", "0.5", notInScalarMap, false},
		{"an env value 1.10 changed to 1.1 is a change", "1.10", "1.1", notInScalarMap, false},
		{"1.1 changed to the string 1.10 is a change", "1.1", "1.10", notInScalarMap, false},
		{"an arg 1.0 changed to 1 is a change", "1.0", "1", notInScalarMap, false},
		{"1 changed to the string 1.0 is a change", "1", "1.0", notInScalarMap, false},
		{"2.50 is no float64's %v", "2.50", "2.5", notInScalarMap, false},
		{"nor is 2.5 the live string 2.50", "2.5", "2.50", notInScalarMap, false},
		{"a float64's %v is never 1000000.0", "1e+06", "1000000.0", notInScalarMap, false},
		{"1000000 as desired text is no float64's %v", "1000000", "1e+06", notInScalarMap, false},
		{"in a map of strings two spellings are two strings", "1e+06", "1000000", inStringMap, false},
		{"the placeholder stands for several values", "-", "-", notInScalarMap, false},
		{"a leading zero is no number cub-scout printed", "7", "007", notInScalarMap, false},
		{"a word is not a number", "7.2", "7.2.0", notInScalarMap, false},
	}
	for _, tt := range tests {
		if got := cubSameValue(tt.desired, tt.live, tt.under); got != tt.same {
			t.Errorf("%s: cubSameValue(%q, %q) = %v, want %v", tt.why, tt.desired, tt.live, got, tt.same)
		}
	}
}

func TestCubDesiredAgreesWithANumberHeldAsText(t *testing.T) {
	tests := []struct {
		why     string
		desired string
		holds   string
		agrees  bool
	}{
		{"a values text rendered unquoted is the float64 cub-scout printed", "1e+06", "1000000", true},
		{"1.10 rendered unquoted decodes as the float64 1.1", "1.1", "1.10", true},
		{"a desired 1.10 is no float64's %v: it is the string, not 1.1", "1.10", "1.1", false},
		{"a desired 1.0 is the string, not 1", "1.0", "1", false},
		{"another number", "1e+06", "2000000", false},
	}
	for _, tt := range tests {
		f := Field{Textual: true, Desired: tt.desired, HasDesired: true}
		if got := f.DesiredAgrees(tt.holds); got != tt.agrees {
			t.Errorf("%s: desired %q agrees with %q = %v, want %v", tt.why, tt.desired, tt.holds, got, tt.agrees)
		}
	}
}

func TestCubScoutConfigMapStrings(t *testing.T) {
	o := oneObservation(t, cubFixture(t, "trace-diff.configmap-strings.json"))
	for _, tt := range []struct {
		path, live string
	}{{"data.map-text", "map[a:c]"}, {"data.nil-text", "<nil>"}} {
		f, ok := fieldAt(o, tt.path)
		// why: `map[a:c]` was denied as structure and `<nil>` planned as a
		// removal, though a ConfigMap's data holds strings and cub-scout
		// prints nil as "-", never "<nil>".
		if !ok || f.Structural != "" || f.Ambiguous != "" || f.Removed || !f.StringValued || f.LiveLike(nil) != tt.live || f.LiveLike("x") != tt.live {
			t.Errorf("%s read as %+v, want the string %q", tt.path, f, tt.live)
		}
	}
	for _, tt := range []struct {
		path  string
		holds any
	}{{"data.empty", ""}, {"data.dash-desired", "-"}} {
		f, ok := fieldAt(o, tt.path)
		// why: cub-scout prints "" and "-" as "-": the values file holding
		// either is what cub-scout compared against, not a moved desired.
		if !ok || !f.DesiredPlaceholder() || !f.DesiredAgrees(tt.holds) || !f.DesiredAgrees(nil) || f.DesiredAgrees("x") || f.DesiredLike(tt.holds) != nil {
			t.Errorf("%s: desired %+v does not agree with %q alone", tt.path, f, tt.holds)
		}
	}
}

func TestCubScoutLivePlaceholderIsAmbiguous(t *testing.T) {
	o := oneObservation(t, cubFixture(t, "trace-diff.configmap-ambiguous.json"))
	if len(o.Fields) != 2 {
		t.Fatalf("fields %+v", o.Fields)
	}
	for _, f := range o.Fields {
		// why: live "" and live "-" print as "-", as an absent key does:
		// neither a removal nor a value.
		if f.Ambiguous == "" || f.Removed || f.Live != nil {
			t.Errorf("%s read as %+v, want ambiguous", f.Path, f)
		}
		// why: the join may credit a write that set what "-" stands for, nothing else.
		if !f.Holds(Written{Value: ""}) || !f.Holds(Written{Value: "-"}) || !f.Holds(Written{Removed: true}) || f.Holds(Written{Value: "x"}) {
			t.Errorf("%s: Holds does not follow the placeholder", f.Path)
		}
	}
}

func TestCubScoutOtherOutputsAreNamed(t *testing.T) {
	tests := []struct {
		file, command string
		more          int
	}{
		{"snapshot.json", "cub-scout snapshot", 0},
		{"map-list.json", "cub-scout map list --json", 2},
		{"import.json", "cub-scout import --json", 0},
		{"tree.json", "cub-scout tree --json", 0},
		{"tree-ownership.json", "cub-scout tree ownership --json", 0},
		{"trace.json", "cub-scout trace --json (an ownership chain, not a diff", 0},
	}
	for _, tt := range tests {
		res := cubFixture(t, tt.file)
		// why: these were "document N: id: unknown key", which does not say
		// the file is not an observation; an inventory gave one per entry.
		if len(res.Observations)+len(res.Triggers)+len(res.Forgets)+len(res.Notices) != 0 || len(res.Errors) != 1 {
			t.Errorf("%s: want one error and nothing else, got %+v", tt.file, res)
			continue
		}
		msg := res.Errors[0].Error()
		if !strings.HasPrefix(msg, tt.file+":") || !strings.Contains(msg, "not an observation: this is the output of "+tt.command) || !strings.Contains(msg, "trace --diff --format json") {
			t.Errorf("%s: %q does not name the file, the command it looks like and what backflow reads", tt.file, msg)
		}
		if more := strings.Contains(msg, "more documents like it"); more != (tt.more > 0) {
			t.Errorf("%s: %q", tt.file, msg)
		}
	}
}

func TestEmptyInputIsAnError(t *testing.T) {
	for _, name := range []string{"empty.json", "whitespace.jsonl"} {
		data := mustRead(t, filepath.Join("testdata", "cub-scout", name))
		for _, res := range []Result{ParseBytes(data, Options{Name: name}), ParseWatchEvents(strings.NewReader(string(data)), Options{Name: name})} {
			// why: cub-scout failing printed nothing, and the input was read
			// as a cycle with nothing in it, no decision and no error.
			if len(res.Errors) != 1 || !errors.Is(res.Errors[0], ErrEmpty) || !errors.Is(res.Errors[0], ErrUnreadable) ||
				!strings.HasPrefix(res.Errors[0].Error(), name+": empty input") {
				t.Errorf("%s: got %v", name, res.Errors)
			}
		}
	}
	// why: an explicit empty list says something (nothing to report) and stays valid.
	if res := ParseBytes([]byte("[]\n"), Options{Name: "list"}); len(res.Errors) != 0 {
		t.Errorf("[]: %v", res.Errors)
	}
}
