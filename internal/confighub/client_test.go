package confighub_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/confighub"
	"github.com/backflow-dev/backflow/internal/confighub/confighubtest"
)

const (
	token = "s3cr3t-t0ken-value"
	alice = "a11ce000-0000-4000-8000-000000000001"
	bob   = "b0b00000-0000-4000-8000-000000000002"
)

const redis = `# rendered for prod
apiVersion: v1
kind: Service
metadata:
  name: redis
  namespace: redis
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: redis-replicas
  namespace: redis
spec:
  replicas: 3 # the incident's field
  template:
    spec:
      containers:
      - name: redis
        image: redis:7
`

type env struct {
	hub    *confighubtest.Server
	url    string
	client *confighub.Client
}

func newEnv(t *testing.T, opts confighubtest.Options, cfg confighub.Config) *env {
	t.Helper()
	if opts.Tokens == nil {
		opts.Tokens = map[string]string{token: alice, "bob-token": bob}
	}
	hub := confighubtest.New(opts)
	url, stop, err := hub.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	hub.AddSpace("staging")
	hub.AddSpace("prod")
	if _, err := hub.AddUnit("prod", "redis", confighubtest.ToolchainKubernetesYAML, []byte(redis), bob); err != nil {
		t.Fatal(err)
	}
	cfg.URL = url
	if cfg.Token == "" {
		cfg.Token = token
	}
	c, err := confighub.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{hub: hub, url: url, client: c}
}

func TestReadAndWriteARevision(t *testing.T) {
	e := newEnv(t, confighubtest.Options{PageSize: 1}, confighub.Config{})
	ctx := context.Background()
	// Several units in the space, one to a page: the lookup follows
	// ConfigHub-Continue to the one it names.
	for _, slug := range []string{"a", "b", "c"} {
		if _, err := e.hub.AddUnit("prod", slug, confighubtest.ToolchainKubernetesYAML, []byte(redis), bob); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := e.client.Resolve(ctx, "prod", "redis")
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.client.Read(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if string(d.Data.Bytes) != redis || d.Data.Hash != confighub.Hash([]byte(redis)) || d.Unit.HeadRevisionNum != 1 || d.Unit.DataHash != d.Data.Hash {
		t.Fatalf("read %+v", d.Unit)
	}
	edited := []byte(strings.Replace(redis, "replicas: 3", "replicas: 4", 1))
	dry, err := e.client.Upload(ctx, ref, edited, confighub.Write{IfMatch: d.Data.Hash, Description: "try", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []confighub.Change{{ResourceType: "apps/v1/StatefulSet", ResourceName: "redis/redis-replicas", Path: "spec.replicas", Type: "Update", From: "3", To: "4"}}
	if fmt.Sprint(dry.Changes) != fmt.Sprint(want) {
		t.Fatalf("dry run changes %+v, want %+v", dry.Changes, want)
	}
	if got := len(e.hub.Revisions("prod", "redis")); got != 1 {
		t.Fatalf("a dry run stored a revision: %d revisions", got)
	}
	if dry.Unit.HeadRevisionNum != 2 {
		t.Fatalf("the dry run's unit is at revision %d, want the 2 it would write", dry.Unit.HeadRevisionNum)
	}
	w, err := e.client.Upload(ctx, ref, edited, confighub.Write{IfMatch: d.Data.Hash, Description: "accepted by alice"})
	if err != nil {
		t.Fatal(err)
	}
	if w.Unit.HeadRevisionNum != 2 || w.Unit.DataHash != confighub.Hash(edited) || !bytes.Equal(e.hub.Data("prod", "redis"), edited) {
		t.Fatalf("written %+v", w.Unit)
	}
	revs, err := e.client.Revisions(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != 2 || revs[1].Num != 2 || revs[1].UserID != alice || revs[1].Description != "accepted by alice" || revs[1].Source == "" {
		t.Fatalf("revisions %+v", revs)
	}
	r2, err := e.client.Revision(ctx, ref, 2)
	if err != nil || r2.ID != revs[1].ID || r2.DataHash != confighub.Hash(edited) {
		t.Fatalf("revision 2: %+v, %v", r2, err)
	}
}

func TestErrorsNameSpaceAndUnit(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		why   string
		setup func(e *env) confighub.Ref
		op    func(c *confighub.Client, r confighub.Ref) error
		kind  error
		retry bool
	}{
		{"a unit that does not exist", nil,
			func(c *confighub.Client, _ confighub.Ref) error { _, err := c.Resolve(ctx, "prod", "nope"); return err }, confighub.ErrNotFound, false},
		{"a space that does not exist", nil,
			func(c *confighub.Client, _ confighub.Ref) error { _, err := c.Resolve(ctx, "dev", "redis"); return err }, confighub.ErrNotFound, false},
		{"a slug that cannot be one", nil,
			func(c *confighub.Client, _ confighub.Ref) error {
				_, err := c.Resolve(ctx, "prod", "re' OR 'x")
				return err
			}, confighub.ErrNotFound, false},
		{"a toolchain other than Kubernetes/YAML",
			func(e *env) confighub.Ref {
				if _, err := e.hub.AddUnit("prod", "props", "AppConfig/Properties", []byte("a=b\n"), bob); err != nil {
					panic(err)
				}
				r, _ := e.client.Resolve(ctx, "prod", "props")
				return r
			},
			func(c *confighub.Client, r confighub.Ref) error { _, err := c.Read(ctx, r); return err }, confighub.ErrToolchain, false},
		{"data that does not parse",
			func(e *env) confighub.Ref {
				if _, err := e.hub.AddUnit("prod", "broken", "Kubernetes/YAML", []byte("kind: [\n"), bob); err != nil {
					panic(err)
				}
				r, _ := e.client.Resolve(ctx, "prod", "broken")
				return r
			},
			func(c *confighub.Client, r confighub.Ref) error { _, err := c.Read(ctx, r); return err }, confighub.ErrUnparseable, false},
		{"a document that is no manifest",
			func(e *env) confighub.Ref {
				if _, err := e.hub.AddUnit("prod", "list", "Kubernetes/YAML", []byte("apiVersion: v1\nkind: ConfigMap\n"), bob); err != nil {
					panic(err)
				}
				r, _ := e.client.Resolve(ctx, "prod", "list")
				return r
			},
			func(c *confighub.Client, r confighub.Ref) error { _, err := c.Read(ctx, r); return err }, confighub.ErrUnparseable, false},
		{"data over the size backflow reads",
			func(e *env) confighub.Ref {
				big := redis + "# " + strings.Repeat("x", 2048) + "\n"
				if _, err := e.hub.AddUnit("prod", "big", "Kubernetes/YAML", []byte(big), bob); err != nil {
					panic(err)
				}
				r, _ := e.client.Resolve(ctx, "prod", "big")
				return r
			},
			func(c *confighub.Client, r confighub.Ref) error { _, err := c.Read(ctx, r); return err }, confighub.ErrTooLarge, false},
		{"a write of data over the size",
			func(e *env) confighub.Ref { r, _ := e.client.Resolve(ctx, "prod", "redis"); return r },
			func(c *confighub.Client, r confighub.Ref) error {
				_, err := c.Upload(ctx, r, bytes.Repeat([]byte("#"), 4096), confighub.Write{IfMatch: "x"})
				return err
			}, confighub.ErrTooLarge, false},
		{"a write that names no hash",
			func(e *env) confighub.Ref { r, _ := e.client.Resolve(ctx, "prod", "redis"); return r },
			func(c *confighub.Client, r confighub.Ref) error {
				_, err := c.Upload(ctx, r, []byte(redis), confighub.Write{})
				return err
			}, confighub.ErrRejected, false},
		{"a 503",
			func(e *env) confighub.Ref {
				r, _ := e.client.Resolve(ctx, "prod", "redis")
				e.hub.Fail(confighubtest.OpGetUnit, 503, 1)
				return r
			},
			func(c *confighub.Client, r confighub.Ref) error { _, err := c.Read(ctx, r); return err }, confighub.ErrServer, true},
		{"a timeout",
			func(e *env) confighub.Ref {
				r, _ := e.client.Resolve(ctx, "prod", "redis")
				e.hub.Hang(confighubtest.OpDownloadUnitData, 1)
				return r
			},
			func(c *confighub.Client, r confighub.Ref) error { _, err := c.Read(ctx, r); return err }, confighub.ErrUnreachable, true},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			e := newEnv(t, confighubtest.Options{}, confighub.Config{MaxDataSize: 1024, HTTP: &http.Client{Timeout: 200 * time.Millisecond}})
			var r confighub.Ref
			if tc.setup != nil {
				r = tc.setup(e)
			}
			before := len(e.hub.Revisions("prod", "redis"))
			err := tc.op(e.client, r)
			if !errors.Is(err, tc.kind) {
				t.Fatalf("error %v, want %v", err, tc.kind)
			}
			if !strings.Contains(err.Error(), `space "`) || (!strings.Contains(err.Error(), `unit "`)) {
				t.Errorf("error %q names neither the space nor the unit", err)
			}
			if confighub.Retryable(err) != tc.retry {
				t.Errorf("Retryable = %v, want %v", !tc.retry, tc.retry)
			}
			if got := len(e.hub.Revisions("prod", "redis")); got != before {
				t.Errorf("a failure wrote: %d revisions, had %d", got, before)
			}
		})
	}
}

func TestUnreachableAndBadToken(t *testing.T) {
	ctx := context.Background()
	c, err := confighub.New(confighub.Config{URL: "http://127.0.0.1:1/api", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Resolve(ctx, "prod", "redis")
	if !errors.Is(err, confighub.ErrUnreachable) || !confighub.Retryable(err) || !strings.Contains(err.Error(), `"redis"`) {
		t.Fatalf("unreachable: %v", err)
	}
	e := newEnv(t, confighubtest.Options{}, confighub.Config{Token: "wrong-token"})
	_, err = e.client.Resolve(ctx, "prod", "redis")
	if !errors.Is(err, confighub.ErrUnauthorized) || confighub.Retryable(err) {
		t.Fatalf("bad token: %v", err)
	}
}

// TestConflict: a write between the read and the upload makes the upload
// a 409 that writes nothing.
func TestConflict(t *testing.T) {
	e := newEnv(t, confighubtest.Options{}, confighub.Config{})
	ctx := context.Background()
	ref, err := e.client.Resolve(ctx, "prod", "redis")
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.client.Read(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	theirs := []byte(strings.Replace(redis, "redis:7", "redis:7.2", 1))
	if _, err := e.hub.Write("prod", "redis", theirs, bob, "bob's image bump"); err != nil {
		t.Fatal(err)
	}
	ours := []byte(strings.Replace(redis, "replicas: 3", "replicas: 4", 1))
	for _, dry := range []bool{true, false} {
		_, err = e.client.Upload(ctx, ref, ours, confighub.Write{IfMatch: d.Data.Hash, DryRun: dry})
		if !errors.Is(err, confighub.ErrConflict) || confighub.Retryable(err) {
			t.Fatalf("dry run %v: %v, want a conflict", dry, err)
		}
	}
	if !bytes.Equal(e.hub.Data("prod", "redis"), theirs) || len(e.hub.Revisions("prod", "redis")) != 2 {
		t.Fatal("the conflicting write changed the unit")
	}
}

// TestTokenNeverShown: the token is in no error, log line or printed
// client, even when a server echoes it back.
func TestTokenNeverShown(t *testing.T) {
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"Code":"401","Message":"bad header %s"}`, r.Header.Get("Authorization"))
	})
	srv := &http.Server{Handler: echo}
	ln, stop := listen(t, srv)
	defer stop()
	c, err := confighub.New(confighub.Config{URL: "http://" + ln + "/api", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Resolve(context.Background(), "prod", "redis")
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	log.Info("resolve", "client", c, "err", err)
	shown := err.Error() + buf.String() + fmt.Sprint(c) + fmt.Sprintf("%+v %#v", c, err)
	if strings.Contains(shown, token) {
		t.Fatalf("the token is shown: %s", shown)
	}
	if !strings.Contains(err.Error(), "(redacted)") {
		t.Fatalf("the echoed header is not redacted: %v", err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []confighub.Config{
		{URL: "ftp://x", Token: "t"},
		{URL: "https://user:pw@hub.example/api", Token: "t"},
		{URL: "ftp://user:pw@hub.example/api", Token: "t"},
		{URL: "https://hub.example/api"},
	} {
		if _, err := confighub.New(cfg); err == nil {
			t.Errorf("%+v accepted", cfg.URL)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("error shows the URL's password: %v", err)
		}
	}
}
