package receipt

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// hostile are strings whose YAML style is easy to get wrong: indicators,
// look-alikes of other types in YAML 1.1 and 1.2, quotes, spaces at the
// ends, non-ASCII, line breaks and tabs.
var hostile = []string{
	"", "a", "web", "apps/v1|Deployment|web|*", ".github/policy.yaml", "spec.replicas", "redis-prod-us-east",
	" a", "a ", "a b", "a: b", "a:", "a:b", ":a", ": a", "a #b", "a#b", "#a", "-a", "- a", "-", "?a", "? a", "?",
	"---", "---a", "...", "...a", "..a", ".a", ".5", ".5e3", ".5_0", "._5", ".e5", ".-5", ".inf", ".Inf", ".NaN", ".nan", ".x", "'a", "\"a", "a'b", "a\"b", "a\\b",
	"true", "True", "TRUE", "tRUE", "false", "yes", "Yes", "YES", "y", "Y", "n", "N", "no", "on", "On", "off", "OFF", "o", "t", "f",
	"null", "Null", "NULL", "nULL", "~", "~a", "<<", "<a", "on-call", "nope", "offset",
	"1", "1.0", "1.10", "0755", "0x1F", "0o17", "0b101", "1_000", "+1", "-1", "1e3", "12:30", "1:2:3", "2001-12-14", "2026-06-18T12:00:00Z",
	"2026-06-18T12:00:00.5+02:00", "2026-06-18 12:00:00", "2026-6-18T1:2:3Z",
	"|a", "a|b", ">a", "%a", "@a", "`a", "!a", "&a", "*a", "[a", "a[b", "{a}", "a,b", ",a", "]", "}",
	"unstated: live change by alice observed 2026-06-18T12:00:00Z", "it's", "ünïcode", "a\tb", "a\nb", "line\n", "\x00", "a\x7fb",
}

var hostileValues = []any{
	nil, true, false, 0, int64(0), int64(-5), int64(math.MaxInt64), 3.5, 4.0, -0.0, 1e21, 1e-7, 123456789.125, math.Inf(1), math.Inf(-1), math.NaN(),
	"4", "yes", "", "x: y", map[string]any{"a": int64(1)}, []any{"a"}, json.Number("4"), uint8(3),
}

// fill sets every string, list of strings, value and flag of v, a receipt
// or a part of one, from the hostile lists.
func fill(rng *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(hostile[rng.IntN(len(hostile))])
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[Value]() {
			if rng.IntN(6) > 0 {
				v.Set(reflect.ValueOf(ValueOf(hostileValues[rng.IntN(len(hostileValues))])))
			} else {
				v.Set(reflect.ValueOf(Value{}))
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(rng, v.Field(i))
			}
		}
	case reflect.Pointer:
		switch rng.IntN(3) {
		case 0:
			v.Set(reflect.Zero(v.Type()))
		default:
			p := reflect.New(v.Type().Elem())
			fill(rng, p.Elem())
			v.Set(p)
		}
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Slice:
		n := rng.IntN(4)
		if rng.IntN(5) == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			if v.Type().Elem().Kind() == reflect.Interface {
				if x := hostileValues[rng.IntN(len(hostileValues))]; x != nil {
					s.Index(i).Set(reflect.ValueOf(x))
				}
				continue
			}
			fill(rng, s.Index(i))
		}
		v.Set(s)
	}
}

// TestEmitterWritesWhatYAMLv3Writes: whenever the hand-written emitter
// takes a receipt, its bytes are yaml.v3's, on receipts of hostile
// strings and values, and on the seed's.
func TestEmitterWritesWhatYAMLv3Writes(t *testing.T) {
	check := func(name string, r *Receipt) bool {
		t.Helper()
		fast, ok := emitFast(r)
		want, err := marshalV3(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ok && !bytes.Equal(fast, want) {
			t.Fatalf("%s: the emitter wrote\n%s\nyaml.v3 writes\n%s", name, fast, want)
		}
		return ok
	}
	for _, p := range []string{seedReceiptPath, "testdata/multi-field.yaml"} {
		r, _, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		check(p, r)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	taken := 0
	const rounds = 1000
	for range rounds / 5 {
		var r Receipt
		fill(rng, reflect.ValueOf(&r).Elem())
		check("hostile receipt", &r)
	}
	// One hostile string or value at a time in a planner-like receipt, so
	// that each is decided by the emitter, not only the first.
	base, _, err := Load("testdata/multi-field.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range rounds {
		r := *base
		r.Spec.Trigger.Intent = hostile[i%len(hostile)]
		r.Spec.Observation.LiveValue = ValueOf(hostileValues[i%len(hostileValues)])
		r.Spec.NotClaimed = []string{hostile[(i/len(hostile))%len(hostile)]}
		r.Spec.RoundTrip.ResidualDrift = []any{hostileValues[(i/7)%len(hostileValues)]}
		if check("one hostile string", &r) {
			taken++
		}
	}
	if taken < rounds/4 {
		t.Errorf("the emitter took %d of %d receipts with one hostile string: too few for the comparison to prove much", taken, rounds)
	}
	t.Logf("the emitter took %d of %d receipts with one hostile string", taken, rounds)
}

// TestEmitterTakesPlannedReceipts: a receipt like the planner's (times,
// sentences with colons, paths, numbers) is written by hand.
func TestEmitterTakesPlannedReceipts(t *testing.T) {
	r, _, err := Load("testdata/multi-field.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := emitFast(r); !ok {
		out, _ := marshalV3(r)
		t.Errorf("the emitter left a planner-like receipt to yaml.v3:\n%s", out)
	}
}
