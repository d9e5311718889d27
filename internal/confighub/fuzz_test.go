package confighub_test

import (
	"testing"

	"github.com/backflow-dev/backflow/internal/confighub"
)

// FuzzCheckManifests: the check of a Unit's data never panics, and data it
// accepts with a document in it stays accepted with a comment added.
func FuzzCheckManifests(f *testing.F) {
	f.Add([]byte(redis))
	f.Add([]byte("kind: [\n"))
	f.Add([]byte("---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n...\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := confighub.CheckManifests(data); err != nil {
			return
		}
		if err := confighub.CheckManifests(append([]byte("# checked\n"), data...)); err != nil {
			t.Fatalf("accepted %q, refused it with a comment before it: %v", data, err)
		}
	})
}
