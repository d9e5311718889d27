package hubstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/confighub/confighubtest"
)

// TestWrittenForFindsTheReceiptsRevision: the revision written for a
// receipt is found by its digest in the change description, so a write
// whose answer was lost is not made again; another receipt's is not.
func TestWrittenForFindsTheReceiptsRevision(t *testing.T) {
	e := newEnv(t, confighubtest.Options{}, 5*time.Second)
	ctx := context.Background()
	_, wb, rcpt := e.plan(alice(4))
	data := wb.Receipts[0].Data
	if n, ok, err := e.store.WrittenFor(ctx, "prod-us-east", "redis", data); err != nil || ok {
		t.Fatalf("before the write: revision %d found %v, %v", n, ok, err)
	}
	if _, err := e.store.Write(ctx, wb.Revision, rcpt, data); err != nil {
		t.Fatal(err)
	}
	if n, ok, err := e.store.WrittenFor(ctx, "prod-us-east", "redis", data); err != nil || !ok || n != 2 {
		t.Fatalf("after the write: revision %d found %v, %v; want 2", n, ok, err)
	}
	other := append([]byte(nil), data...)
	other = append(other, '\n')
	if n, ok, err := e.store.WrittenFor(ctx, "prod-us-east", "redis", other); err != nil || ok {
		t.Fatalf("another receipt: revision %d found %v, %v", n, ok, err)
	}
	e.hub.Fail(confighubtest.OpListSpaces, 500, 1)
	if _, ok, err := e.store.WrittenFor(ctx, "prod-us-east", "redis", data); err == nil || ok {
		t.Fatalf("a failed look-up says %v, %v: it must be an error", ok, err)
	}
}
