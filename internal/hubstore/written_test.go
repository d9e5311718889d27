package hubstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/confighub/confighubtest"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// usEastRedis is the test's Unit, as a unit's config names it.
var usEastRedis = repoconfig.StoreRef{Store: repoconfig.StoreConfigHub, Name: "prod-us-east/redis"}

// TestWrittenForFindsTheReceiptsRevision: the revision written for a
// receipt is found by its digest in the change description, so a write
// whose answer was lost is not made again; another receipt's is not.
func TestWrittenForFindsTheReceiptsRevision(t *testing.T) {
	e := newEnv(t, confighubtest.Options{}, 5*time.Second)
	ctx := context.Background()
	_, wb, rcpt := e.plan(alice(4))
	data := wb.Receipts[0].Data
	if n, ok, err := e.store.WrittenFor(ctx, usEastRedis, data); err != nil || ok {
		t.Fatalf("before the write: revision %d found %v, %v", n, ok, err)
	}
	if _, err := e.store.Write(ctx, wb.Revision, rcpt, data); err != nil {
		t.Fatal(err)
	}
	if n, ok, err := e.store.WrittenFor(ctx, usEastRedis, data); err != nil || !ok || n != 2 {
		t.Fatalf("after the write: revision %d found %v, %v; want 2", n, ok, err)
	}
	other := append([]byte(nil), data...)
	other = append(other, '\n')
	if n, ok, err := e.store.WrittenFor(ctx, usEastRedis, other); err != nil || ok {
		t.Fatalf("another receipt: revision %d found %v, %v", n, ok, err)
	}
	e.hub.Fail(confighubtest.OpListSpaces, 500, 1)
	if _, ok, err := e.store.WrittenFor(ctx, usEastRedis, data); err == nil || ok {
		t.Fatalf("a failed look-up says %v, %v: it must be an error", ok, err)
	}
}

// TestOnlyConfigHubUnits: a reference to another store, or one that is
// not space/unit, is refused naming it, before ConfigHub is asked.
func TestOnlyConfigHubUnits(t *testing.T) {
	e := newEnv(t, confighubtest.Options{}, 5*time.Second)
	ctx := context.Background()
	for _, r := range []repoconfig.StoreRef{
		{Store: "other", Name: "prod-us-east/redis"},      // another store's document
		{Store: repoconfig.StoreConfigHub, Name: "redis"}, // no space
	} {
		if _, _, err := e.store.Reader(ctx)(r); err == nil || !strings.Contains(err.Error(), r.String()+" is not a ConfigHub unit") {
			t.Errorf("Reader(%v): %v", r, err)
		}
		if _, _, err := e.store.WrittenFor(ctx, r, nil); err == nil || !strings.Contains(err.Error(), "is not a ConfigHub unit") {
			t.Errorf("WrittenFor(%v): %v", r, err)
		}
	}
}
