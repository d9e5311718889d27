package observe

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseNative10000Fields parses 1,000 native YAML documents of 10
// fields each, the planner benchmark's load.
func BenchmarkParseNative10000Fields(b *testing.B) {
	var s strings.Builder
	for d := 0; d < 1000; d++ {
		fmt.Fprintf(&s, "---\napiVersion: backflow.dev/v1alpha1\nkind: ObjectStateObserved\nspec:\n  cluster: c1\n  observedAt: \"2026-06-18T12:00:00Z\"\n  object: \"apps/v1|StatefulSet|ns-%d|db\"\n  change: {actor: alice, groups: [sre], attribution: audit-log}\n  fields:\n", d)
		for f := 0; f < 10; f++ {
			fmt.Fprintf(&s, "    - {field: \"spec.template.spec.containers[%d].image\", live: \"img:%d\", desired: \"img:old\", manager: kubectl}\n", f, f)
		}
	}
	benchParse(b, []byte(s.String()), 1000, 10000)
}

// BenchmarkParseTraceDiff10000Fields parses 1,000 cub-scout trace-diffs
// (JSON Lines) of 10 differences each.
func BenchmarkParseTraceDiff10000Fields(b *testing.B) {
	var s strings.Builder
	for d := 0; d < 1000; d++ {
		fmt.Fprintf(&s, `{"status":"changed","context":"c1","resource":{"apiVersion":"apps/v1","kind":"StatefulSet","namespace":"ns-%d","name":"db"},"read":{"available":true,"observedAt":"2026-06-18T12:00:00Z","resourceVersion":"1"},"differences":[`, d)
		for f := 0; f < 10; f++ {
			if f > 0 {
				s.WriteByte(',')
			}
			fmt.Fprintf(&s, `{"field":"spec.template.spec.containers[%d].image","desired":"img:old","live":"img:%d","cause":"manual-edit","managerHint":"kubectl"}`, f, f)
		}
		s.WriteString("]}\n")
	}
	benchParse(b, []byte(s.String()), 1000, 10000)
}

func benchParse(b *testing.B, data []byte, wantObs, wantFields int) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		res := ParseBytes(data, Options{Name: "bench"})
		n := 0
		for _, o := range res.Observations {
			n += len(o.Fields)
		}
		if len(res.Errors) != 0 || len(res.Observations) != wantObs || n != wantFields {
			b.Fatalf("%d observations, %d fields, %d errors", len(res.Observations), n, len(res.Errors))
		}
	}
}
