package hubstore_test

import (
	"cmp"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/confighub"
	"github.com/backflow-dev/backflow/internal/confighub/confighubtest"
	"github.com/backflow-dev/backflow/internal/hubstore"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// cycleEnv is one Unit that cannot be read, and the client a cycle reads
// it through.
type cycleEnv struct {
	t   *testing.T
	hub *confighubtest.Server
	url string
	cfg confighub.Config
}

// store is the store a cycle reads through: a client made from cfg now,
// as the bot makes one from its config.
func (e *cycleEnv) store() *hubstore.Store {
	e.t.Helper()
	c, err := confighub.New(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return &hubstore.Store{Client: c}
}

// cycle reads the repository and the Unit and plans alice's 3 -> 4, as a
// cycle of the bot does; it writes what the plan proposes.
func (e *cycleEnv) cycle() (readErr error, written int64, err error) {
	e.t.Helper()
	files := map[string]string{repoconfig.Path: repoConfig, ".github/policy.yaml": policyText}
	read := func(p string, _ int64) ([]byte, error) { return []byte(files[p]), nil }
	st := e.store()
	got, err := plan.ReadSnapshot(read, plan.ReadOptions{Commit: strings.Repeat("c", 40),
		Revisions: st.Reader(context.Background())})
	if err != nil {
		e.t.Fatal(err)
	}
	res := plan.Plan([]observe.Observation{alice(4)}, nil, got.Snapshot, t0.Add(5*time.Minute))
	if len(got.FileErrors) > 0 {
		if len(res.WriteBacks) != 0 {
			e.t.Fatalf("a Unit that could not be read was planned: %+v", res.WriteBacks)
		}
		if len(got.FileErrors) != 1 {
			e.t.Fatalf("file errors %v, want one", got.FileErrors)
		}
		return got.FileErrors[0], 0, nil
	}
	if len(res.WriteBacks) != 1 || res.WriteBacks[0].Revision == nil {
		e.t.Fatalf("no revision planned: %+v %q", res.Decisions, res.Errors)
	}
	wb := res.WriteBacks[0]
	w, err := st.Write(context.Background(), wb.Revision, res.Decisions[0].Receipt, wb.Receipts[0].Data)
	return nil, w.Revision, err
}

// TestUnreadableUnitFailsClosedAndIsReadAgain: each way the Unit a unit
// names cannot be read is a snapshot file error naming its space and
// unit, of its kind; the unit is not planned and nothing is written. The
// next cycle reads the Unit again: once what failed is put right, it
// plans and writes the revision; what cannot be put right in ConfigHub
// fails the same way again, writing nothing.
func TestUnreadableUnitFailsClosedAndIsReadAgain(t *testing.T) {
	big := unitData + "# " + strings.Repeat("x", 2048) + "\n"
	cases := []struct {
		why       string
		toolchain string // the Unit's; Kubernetes/YAML when ""
		data      string // the Unit's data; unitData when ""
		noUnit    bool   // the Space holds no such Unit
		fail      func(e *cycleEnv)
		kind      error
		retryable bool
		mend      func(e *cycleEnv) // nil: nothing a cycle can wait for
	}{
		{why: "ConfigHub unreachable: nothing listens at its URL",
			fail: func(e *cycleEnv) { e.cfg.URL = closedURL(e.t) }, kind: confighub.ErrUnreachable, retryable: true,
			mend: func(e *cycleEnv) { e.cfg.URL = e.url }},
		{why: "ConfigHub not answering in time",
			fail: func(e *cycleEnv) { e.hub.Hang(confighubtest.OpGetUnit, 1) }, kind: confighub.ErrUnreachable,
			retryable: true, mend: func(*cycleEnv) {}},
		{why: "ConfigHub answering 503",
			fail: func(e *cycleEnv) { e.hub.Fail(confighubtest.OpDownloadUnitData, 503, 1) }, kind: confighub.ErrServer,
			retryable: true, mend: func(*cycleEnv) {}},
		{why: "a bad token (401) until the bot is given the right one",
			fail: func(e *cycleEnv) { e.cfg.Token = "not-the-token" }, kind: confighub.ErrUnauthorized,
			mend: func(e *cycleEnv) { e.cfg.Token = "bot-token" }},
		{why: "a Unit that does not exist until someone creates it", noUnit: true, kind: confighub.ErrNotFound,
			mend: func(e *cycleEnv) {
				if _, err := e.hub.AddUnit("prod-us-east", "redis", confighubtest.ToolchainKubernetesYAML,
					[]byte(unitData), bob); err != nil {
					e.t.Fatal(err)
				}
			}},
		{why: "a toolchain other than Kubernetes/YAML, which a Unit keeps", toolchain: "AppConfig/Properties",
			kind: confighub.ErrToolchain},
		{why: "data that does not parse until someone fixes it", data: "kind: [\n", kind: confighub.ErrUnparseable,
			mend: func(e *cycleEnv) { e.write(unitData) }},
		{why: "data over the size backflow reads until it shrinks", data: big, kind: confighub.ErrTooLarge,
			mend: func(e *cycleEnv) { e.write(unitData) }},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			hub := confighubtest.New(confighubtest.Options{Tokens: map[string]string{"bot-token": botUser},
				Now: func() time.Time { return t0 }})
			url, stop, err := hub.Listen()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			hub.AddSpace("prod-us-east")
			if !tc.noUnit {
				data := cmp.Or(tc.data, unitData)
				if _, err := hub.AddUnit("prod-us-east", "redis", cmp.Or(tc.toolchain, confighubtest.ToolchainKubernetesYAML),
					[]byte(data), bob); err != nil {
					t.Fatal(err)
				}
			}
			e := &cycleEnv{t: t, hub: hub, url: url, cfg: confighub.Config{URL: url, Token: "bot-token",
				MaxDataSize: 1024, HTTP: &http.Client{Timeout: 300 * time.Millisecond}}}
			if tc.fail != nil {
				tc.fail(e)
			}
			revs := len(hub.Revisions("prod-us-east", "redis"))
			for cycle := 1; cycle <= 2; cycle++ {
				readErr, _, werr := e.cycle()
				if werr != nil {
					t.Fatalf("cycle %d wrote with an error: %v", cycle, werr)
				}
				if !errors.Is(readErr, tc.kind) {
					t.Fatalf("cycle %d: %v, want %v", cycle, readErr, tc.kind)
				}
				for _, name := range []string{`unit "redis" of space "prod-us-east"`, "prod-us-east/redis"} {
					if !strings.Contains(readErr.Error(), name) {
						t.Errorf("cycle %d: %q does not name %s", cycle, readErr, name)
					}
				}
				if strings.Contains(readErr.Error(), "bot-token") {
					t.Errorf("cycle %d: the error shows the token: %q", cycle, readErr)
				}
				if confighub.Retryable(readErr) != tc.retryable {
					t.Errorf("cycle %d: retryable %v, want %v", cycle, !tc.retryable, tc.retryable)
				}
				if n := hub.Requests(confighubtest.OpUploadUnitData); n != 0 ||
					len(hub.Revisions("prod-us-east", "redis")) != revs {
					t.Fatalf("cycle %d: %d uploads, %d revisions, had %d", cycle, n,
						len(hub.Revisions("prod-us-east", "redis")), revs)
				}
				if tc.mend != nil {
					break
				}
				// Nothing can mend it: a second cycle fails the same way.
				if tc.fail != nil {
					tc.fail(e)
				}
			}
			if tc.mend == nil {
				return
			}
			tc.mend(e)
			before := len(hub.Revisions("prod-us-east", "redis"))
			readErr, written, werr := e.cycle()
			if readErr != nil || werr != nil {
				t.Fatalf("the cycle after: read %v, write %v", readErr, werr)
			}
			if got := len(hub.Revisions("prod-us-east", "redis")); written != int64(got) || got != before+1 ||
				!strings.Contains(string(hub.Data("prod-us-east", "redis")), "replicas: 4 #") {
				t.Fatalf("the cycle after wrote revision %d, the Unit has %d revisions, had %d", written, got, before)
			}
		})
	}
}

// write stores data as the Unit's new revision, by bob.
func (e *cycleEnv) write(data string) {
	e.t.Helper()
	if _, err := e.hub.Write("prod-us-east", "redis", []byte(data), bob, "bob"); err != nil {
		e.t.Fatal(err)
	}
}

// closedURL is an API URL nothing listens at.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + confighubtest.BasePath
}
