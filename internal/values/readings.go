package values

import "sync"

// Readings remembers Helm's reading of YAML documents by their exact bytes,
// so that a document read once (by the planner, say) is not read again by
// the editor: HelmUnmarshal is a function of the bytes alone, and a reading
// is only ever taken for bytes equal to the ones it was made of. The trees
// it hands out are shared; nobody may change them. The zero value is not
// ready: use NewReadings. A nil *Readings reads every time.
type Readings struct {
	mu sync.Mutex
	m  map[string]reading
}

type reading struct {
	v   any
	err error
}

// NewReadings returns an empty set of readings.
func NewReadings() *Readings {
	return &Readings{m: map[string]reading{}}
}

// HelmUnmarshal is the package's HelmUnmarshal, remembered by doc's bytes.
func (r *Readings) HelmUnmarshal(doc []byte) (any, error) {
	if r == nil {
		return HelmUnmarshal(doc)
	}
	r.mu.Lock()
	got, ok := r.m[string(doc)]
	r.mu.Unlock()
	if ok {
		return got.v, got.err
	}
	v, err := HelmUnmarshal(doc)
	r.mu.Lock()
	r.m[string(doc)] = reading{v, err}
	r.mu.Unlock()
	return v, err
}
