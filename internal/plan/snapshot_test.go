package plan_test

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/plan"
)

// scenarioFiles reads a scenario's checkout into memory, so a case can
// break one file of it.
func scenarioFiles(t *testing.T, name string) map[string][]byte {
	t.Helper()
	root := filepath.Join("testdata", "scenarios", name, "repo")
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestReadSnapshot(t *testing.T) {
	const (
		config = ".github/backflow.yaml"
		pol    = ".github/reverse-reconcile-policy.yaml"
		values = "envs/prod-us-east/redis/values.yaml"
	)
	cases := []struct {
		why, scenario string
		edit          func(map[string][]byte)
		paused        bool
		// kind is the error's sentinel (nil: no error); file the file a
		// *SnapshotError names.
		kind       error
		file       string
		fileErrors int
	}{
		{why: "a whole checkout reads", scenario: "seed-incident"},
		{why: "no repo config is unreadable, with the reader's own not-found error kept", scenario: "seed-incident",
			edit: func(f map[string][]byte) { delete(f, config) }, kind: plan.ErrUnreadable, file: config},
		{why: "an unknown key makes the repo config invalid", scenario: "seed-incident",
			edit: func(f map[string][]byte) { f[config] = append(f[config], "bogus: 1\n"...) }, kind: plan.ErrInvalid, file: config},
		{why: "a missing policy is unreadable", scenario: "seed-incident",
			edit: func(f map[string][]byte) { delete(f, pol) }, kind: plan.ErrUnreadable, file: pol},
		{why: "a policy that does not default to deny is invalid", scenario: "seed-incident",
			edit: func(f map[string][]byte) { f[pol] = []byte("kind: nope\n") }, kind: plan.ErrInvalid, file: pol},
		{why: "a missing values file fails its unit only: the snapshot reads", scenario: "seed-incident",
			edit: func(f map[string][]byte) { delete(f, values) }, fileErrors: 1},
		{why: "a paused repository reads whole when the caller plans it anyway", scenario: "paused"},
		{why: "a paused repository stops after its config when the caller will write nothing", scenario: "paused",
			edit: func(f map[string][]byte) { delete(f, pol) }, paused: true, kind: plan.ErrPaused},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			files := maps.Clone(scenarioFiles(t, tc.scenario))
			if tc.edit != nil {
				tc.edit(files)
			}
			read := func(p string, _ int64) ([]byte, error) {
				data, ok := files[p]
				if !ok {
					return nil, fs.ErrNotExist
				}
				return data, nil
			}
			got, err := plan.ReadSnapshot(read, plan.ReadOptions{Commit: "c0ffee", StopIfPaused: tc.paused})
			if tc.kind == nil {
				if err != nil {
					t.Fatal(err)
				}
				if got.Snapshot.Policy == nil || got.Snapshot.Commit != "c0ffee" || got.PolicySum == "" || len(got.FileErrors) != tc.fileErrors {
					t.Errorf("read %+v", got)
				}
				if tc.fileErrors > 0 && (!strings.Contains(got.FileErrors[0].Error(), values) || !errors.Is(got.FileErrors[0], fs.ErrNotExist)) {
					t.Errorf("the file error does not name the file or lost the reader's: %v", got.FileErrors)
				}
				return
			}
			if !errors.Is(err, tc.kind) {
				t.Fatalf("error %v, want %v", err, tc.kind)
			}
			var se *plan.SnapshotError
			if tc.file != "" && (!errors.As(err, &se) || se.File != tc.file || !strings.Contains(err.Error(), tc.file)) {
				t.Errorf("error %v does not name %s", err, tc.file)
			}
			if errors.Is(tc.kind, plan.ErrUnreadable) && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the reader's error is lost: %v", err)
			}
			if errors.Is(tc.kind, plan.ErrPaused) && (got.Snapshot.Config == nil || !got.Snapshot.Config.Paused) {
				t.Errorf("a paused read keeps the config: %+v", got)
			}
		})
	}
}
