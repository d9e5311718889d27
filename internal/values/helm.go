package values

import (
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	sigsyaml "sigs.k8s.io/yaml"
)

// HelmUnmarshal reads doc exactly as sigs.k8s.io/yaml.Unmarshal(doc, &v,
// useNumber) does, which is how Helm reads values. That function decodes
// with yaml.v2 (the same go.yaml.in/yaml/v2 called here), turns the tree into
// JSON text and decodes the text again; for the trees values files hold, the
// result is fixed by the yaml.v2 tree alone, so it is built from that tree
// directly, without the text. Wherever the text round trip could do
// something the direct build does not reproduce exactly (an error, a key of
// another type, two keys with the same text, invalid UTF-8, a non-finite
// float), the document is read by sigs.k8s.io/yaml itself.
func HelmUnmarshal(doc []byte) (any, error) {
	var raw any
	if err := yamlv2.Unmarshal(doc, &raw); err == nil {
		if v, ok := jsonTyped(raw); ok {
			return v, nil
		}
	}
	var v any
	if err := sigsyaml.Unmarshal(doc, &v, useNumber); err != nil {
		return nil, err
	}
	return v, nil
}

// jsonTyped is what a yaml.v2 value becomes after json.Marshal and a
// json.Decoder with UseNumber: maps with string keys, []any, strings,
// bools, nil, and json.Number spelled as encoding/json spells the number.
// ok is false where the result is not certain to be exactly that.
func jsonTyped(v any) (any, bool) {
	switch x := v.(type) {
	case nil, bool:
		return x, true
	case string:
		// json.Marshal replaces invalid UTF-8 with U+FFFD. v as it came:
		// x would be boxed again.
		return v, utf8.ValidString(x)
	case int:
		if n := smallNumbers(); x >= 0 && x < len(n) {
			return n[x], true
		}
		return json.Number(strconv.Itoa(x)), true
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), true
	case uint64:
		return json.Number(strconv.FormatUint(x, 10)), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, false // json.Marshal refuses them
		}
		b, err := json.Marshal(x)
		if err != nil {
			return nil, false
		}
		return json.Number(b), true
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var ok bool
			if out[i], ok = jsonTyped(e); !ok {
				return nil, false
			}
		}
		return out, true
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := jsonKey(k)
			if !ok {
				return nil, false
			}
			if _, dup := out[ks]; dup {
				// sigs.k8s.io/yaml keeps whichever value its map
				// iteration meets last.
				return nil, false
			}
			if out[ks], ok = jsonTyped(e); !ok {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}

// smallNumbers are the readings of the integers most values files hold
// (replicas, ports below 1024, counts), boxed once, when first read rather
// than when the program starts: a reading boxed each of them again.
var smallNumbers = sync.OnceValue(func() *[1024]any {
	var n [1024]any
	for i := range n {
		n[i] = json.Number(strconv.Itoa(i))
	}
	return &n
})

// jsonKey is the text sigs.k8s.io/yaml gives a yaml.v2 map key.
func jsonKey(k any) (string, bool) {
	var s string
	switch x := k.(type) {
	case string:
		s = x
	case int:
		s = strconv.Itoa(x)
	case int64:
		s = strconv.FormatInt(x, 10)
	case float64:
		// As sigs.k8s.io/yaml does: 32-bit precision, YAML's names for
		// the infinities and NaN.
		s = strconv.FormatFloat(x, 'g', -1, 32)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
	case bool:
		s = strconv.FormatBool(x)
	default:
		return "", false // sigs.k8s.io/yaml fails on other key types
	}
	return s, utf8.ValidString(s)
}
