package source

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
)

func TestAuditHandler(t *testing.T) {
	line := scaleEvent{id: "a", user: "alice", groups: []string{"sre"}, replicas: 4}.json(t)
	list := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[` + line + `]}`
	sign := func(secret, body string) string {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(body))
		return "sha256=" + hex.EncodeToString(m.Sum(nil))
	}
	cases := []struct {
		why      string
		h        AuditHandler
		method   string
		body     string
		header   map[string]string
		status   int
		accepted int
	}{
		{why: "the webhook backend's bearer token is accepted",
			h: AuditHandler{Token: "t0k"}, body: list, header: map[string]string{"Authorization": "Bearer t0k"}, status: 200, accepted: 1},
		{why: "a wrong token is refused and nothing is kept",
			h: AuditHandler{Token: "t0k"}, body: list, header: map[string]string{"Authorization": "Bearer t0x"}, status: 401},
		{why: "a valid signature is accepted",
			h: AuditHandler{Secret: []byte("s3")}, body: list, header: map[string]string{AuditSignatureHeader: sign("s3", list)}, status: 200, accepted: 1},
		{why: "a bad signature is refused even with a good token",
			h: AuditHandler{Secret: []byte("s3"), Token: "t0k"}, body: list,
			header: map[string]string{AuditSignatureHeader: sign("other", list), "Authorization": "Bearer t0k"}, status: 401},
		{why: "with no credential configured every request is refused (fail closed)",
			h: AuditHandler{}, body: list, header: map[string]string{"Authorization": "Bearer "}, status: 401},
		{why: "a body over the cap is refused before it is read further",
			h: AuditHandler{Token: "t0k", MaxBytes: 64}, body: list, header: map[string]string{"Authorization": "Bearer t0k"}, status: 413},
		{why: "only POST is served",
			h: AuditHandler{Token: "t0k"}, method: http.MethodGet, header: map[string]string{"Authorization": "Bearer t0k"}, status: 405},
		{why: "a body with nothing readable is a bad request",
			h: AuditHandler{Token: "t0k"}, body: "{nope", header: map[string]string{"Authorization": "Bearer t0k"}, status: 400},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			log := &AuditLog{}
			tc.h.Log = log
			got := 0
			tc.h.Accepted = func(n int) { got += n }
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, "/audit", strings.NewReader(tc.body))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			tc.h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if log.Len() != tc.accepted || got != tc.accepted {
				t.Errorf("kept %d, told %d, want %d", log.Len(), got, tc.accepted)
			}
		})
	}
}

func TestAuditLogTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	a := scaleEvent{id: "a", user: "alice", replicas: 4}.json(t)
	b := scaleEvent{id: "b", user: "bob", replicas: 5}.json(t)
	c := scaleEvent{id: "c", user: "carol", replicas: 6}.json(t)
	write := func(s string, flag int) {
		f, err := os.OpenFile(path, flag|os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	l := &AuditLog{}
	l.Tail(path)
	write(a+"\n"+b[:20], os.O_TRUNC)
	if errs := l.Refresh(); len(errs) > 0 || l.Len() != 1 {
		t.Fatalf("why: a line still being written waits for its end; len %d, errors %v", l.Len(), errs)
	}
	write(b[20:]+"\n", os.O_APPEND)
	if errs := l.Refresh(); len(errs) > 0 || l.Len() != 2 {
		t.Fatalf("why: the rest of the line completes the event; len %d, errors %v", l.Len(), errs)
	}
	write(c+"\n", os.O_TRUNC)
	if errs := l.Refresh(); len(errs) > 0 || l.Len() != 3 {
		t.Fatalf("why: a rotated (shorter) file is read from its start; len %d, errors %v", l.Len(), errs)
	}
}

// fixedSource serves one result.
type fixedSource struct{ res observe.Result }

func (f fixedSource) Name() string                        { return "fixed" }
func (f fixedSource) Read(context.Context) observe.Result { return f.res }

func TestAttributingSource(t *testing.T) {
	// why: observations from any source (here a cub-scout one, which never
	// says who) reach audit-log through the join.
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(path, []byte(scaleEvent{id: "a", user: "alice", groups: []string{"sre"}, replicas: 4}.json(t)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := redisObservation(observe.Field{Path: "spec.replicas", Live: "4", Textual: true})
	o.Source = observe.SourceCubScout
	l := &AuditLog{}
	l.Tail(path)
	src := &Attributing{Source: fixedSource{observe.Result{Observations: []observe.Observation{o}}}, Log: l}
	res := src.Read(context.Background())
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	got := res.Observations[0].Change
	if got.Actor != "alice" || got.Attribution != observe.AttributionAuditLog || strings.Join(got.Groups, ",") != "sre" {
		t.Errorf("change %+v", got)
	}
}

func TestAuditLog(t *testing.T) {
	evs := parseEvents(t,
		scaleEvent{id: "1", user: "alice", replicas: 4},
		scaleEvent{id: "2", user: "bob", replicas: 5},
		scaleEvent{id: "3", user: "carol", replicas: 6})
	l := &AuditLog{Max: 2}
	if n := l.Add(evs[0], evs[0]); n != 1 {
		t.Errorf("why: the same audit id twice is one event; added %d", n)
	}
	l.Add(evs[1:]...)
	if l.Len() != 2 {
		t.Errorf("why: the oldest events are dropped past Max; len %d", l.Len())
	}
	got := l.EventsOf(observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"})
	if len(got) != 2 || got[0].User != "bob" || got[1].User != "carol" {
		t.Errorf("events %+v", got)
	}
	if n := l.Add(evs[0]); n != 1 {
		t.Errorf("why: a dropped id may come back; added %d", n)
	}
}
