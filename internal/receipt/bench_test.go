package receipt

import (
	"os"
	"testing"

	"github.com/backflow-dev/backflow/internal/policy"
)

func BenchmarkParseAndVerify(b *testing.B) {
	data, err := os.ReadFile(seedReceiptPath)
	if err != nil {
		b.Fatal(err)
	}
	pol, err := policy.Load(seedPolicyPath)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r, _, err := Parse("r.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		if vs := Verify(r, pol, seedPolicyRef); len(vs) != 0 {
			b.Fatal(vs)
		}
	}
}

func BenchmarkMarshal(b *testing.B) {
	r, _, err := Load(seedReceiptPath)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}
