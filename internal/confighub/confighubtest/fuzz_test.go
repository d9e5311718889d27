package confighubtest

import "testing"

// FuzzDiffManifests: the stand-in's diff never panics, and data that
// parses differs from itself in nothing.
func FuzzDiffManifests(f *testing.F) {
	f.Add([]byte(manifests))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: [1, {x: y}]}\n"))
	f.Add([]byte("kind: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := diffManifests(data, data)
		if err != nil {
			return
		}
		if len(d) != 0 {
			t.Fatalf("%q differs from itself: %+v", data, d)
		}
	})
}
