package diffbound

import "testing"

// BenchmarkCheck is the whole-diff check of one write-back (a values file
// and its receipt), as the App runs it on every head it writes.
func BenchmarkCheck(b *testing.B) {
	in := pullRequest(b)
	b.ResetTimer()
	for b.Loop() {
		if res := Check(in); !res.OK() {
			b.Fatal(res.Violations)
		}
	}
}
