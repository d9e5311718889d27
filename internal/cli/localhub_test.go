package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/confighub"
)

const hubUnitYAML = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: redis-replicas
  namespace: redis
spec:
  replicas: 3
`

func TestLocalhubUsageErrors(t *testing.T) {
	dir := t.TempDir()
	unit := writeFile(t, dir, "redis.yaml", hubUnitYAML)
	badYAML := writeFile(t, dir, "bad.yaml", "kind: [\n")
	noName := writeFile(t, dir, "noname.yaml", "apiVersion: v1\nkind: ConfigMap\n")
	empty := writeFile(t, dir, "empty.yaml", "# nothing rendered\n")
	missing := filepath.Join(dir, "nope.yaml")
	serve := []string{"localhub", "--listen", "127.0.0.1:0", "--dir", dir}
	cases := []struct {
		name string
		args []string
		want []string // each in stderr
	}{
		{"no dir", []string{"localhub", "--listen", "127.0.0.1:0"}, []string{"--listen and --dir are required"}},                                        // why: the state folder is required
		{"bad repo flag", append(serve, "--repo", "acme="+dir), []string{"want OWNER/NAME=FOLDER"}},                                                     // why: OWNER/NAME is required
		{"missing folder", append(serve, "--repo", "acme/x="+filepath.Join(dir, "nope")), []string{"no such file"}},                                     // why: the folder must exist
		{"bad listen", []string{"localhub", "--listen", "not-an-address", "--dir", dir}, []string{"listening on"}},                                      // why: a bad address cannot serve
		{"unit without space", append(serve, "--confighub-unit", "redis="+unit), []string{`"redis=` + unit + `"`, "want SPACE/UNIT=FILE"}},              // why: a Unit lives in a space
		{"unit without file", append(serve, "--confighub-unit", "prod/redis"), []string{"want SPACE/UNIT=FILE"}},                                        // why: the data comes from a file
		{"unit with a path", append(serve, "--confighub-unit", "prod/redis/x="+unit), []string{`"redis/x" is not a ConfigHub slug`}},                    // why: a slug has no "/"
		{"space not a slug", append(serve, "--confighub-unit", "-prod/redis="+unit), []string{`"-prod" is not a ConfigHub slug`}},                       // why: the API's slug pattern
		{"missing file", append(serve, "--confighub-unit", "prod/redis="+missing), []string{missing, "no such file"}},                                   // why: names the file it cannot read
		{"bad YAML", append(serve, "--confighub-unit", "prod/redis="+badYAML), []string{badYAML, "Kubernetes/YAML", "document 0"}},                      // why: names the file and where it does not parse
		{"no name", append(serve, "--confighub-unit", "prod/redis="+noName), []string{noName, "metadata.name"}},                                         // why: a resource needs its name
		{"no manifest", append(serve, "--confighub-unit", "prod/redis="+empty), []string{empty, "no manifest"}},                                         // why: a Unit of nothing applies nothing
		{"twice", append(serve, "--confighub-unit", "prod/redis="+unit, "--confighub-unit", "prod/redis="+unit), []string{"prod/redis is given twice"}}, // why: one Unit, one file
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != 2 || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and nothing on stdout", code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not name %q", stderr, w)
				}
			}
		})
	}
}

// TestLocalhubServesConfigHub runs `backflow localhub --confighub-unit`
// as a process: backflow's ConfigHub client reads the Unit at the JSON
// line's confighubURL with the token localhub wrote, revision 1 applied;
// the stand-in's worker route applies the head and answers its data; and
// the hub's own API is still served beside them.
func TestLocalhubServesConfigHub(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	unit := writeFile(t, dir, "redis.yaml", hubUnitYAML)
	_, out, _ := cliProcess(t, "localhub", "--listen", "127.0.0.1:0", "--dir", filepath.Join(dir, "hub"),
		"--confighub-unit", "prod-us-east/redis="+unit)
	var ep struct {
		APIURL, ConfigHubURL, ConfigHubApplyURL, ConfigHubTokenPath string
	}
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &ep) != nil {
		t.Fatalf("localhub endpoints: %q %v", line, err)
	}
	if ep.ConfigHubTokenPath != filepath.Join(dir, "hub", "confighub-token") || !strings.HasSuffix(ep.ConfigHubURL, "/api") {
		t.Fatalf("endpoints %s: want the token in the state folder and the API's URL", line)
	}
	tok, err := os.ReadFile(ep.ConfigHubTokenPath)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	client, err := confighub.New(confighub.Config{URL: ep.ConfigHubURL, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref, err := client.Resolve(ctx, "prod-us-east", "redis")
	if err != nil {
		t.Fatal(err)
	}
	u, err := client.GetUnit(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if u.HeadRevisionNum != 1 || u.LastReleasedRevisionNum != 1 || u.Toolchain != "Kubernetes/YAML" {
		t.Fatalf("the Unit is at %d, applied %d, toolchain %q: want revision 1 applied, Kubernetes/YAML",
			u.HeadRevisionNum, u.LastReleasedRevisionNum, u.Toolchain)
	}
	if d, err := client.Download(ctx, ref); err != nil || string(d.Bytes) != hubUnitYAML {
		t.Fatalf("the Unit's data: %v %q, want the file's bytes", err, d.Bytes)
	}
	post := func(url, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := post(ep.ConfigHubApplyURL+"?space=prod-us-east&unit=redis", "wrong"); code != 401 {
		t.Fatalf("the worker route with a wrong token: %d %s, want 401", code, body)
	}
	code, body := post(ep.ConfigHubApplyURL+"?space=prod-us-east&unit=redis", token)
	var applied struct {
		RevisionNum int64
		Data        string
	}
	if code != 200 || json.Unmarshal([]byte(body), &applied) != nil || applied.RevisionNum != 1 ||
		applied.Data != hubUnitYAML {
		t.Fatalf("the worker route: %d %s, want revision 1 and the file's bytes", code, body)
	}
	// The worker route is not an operation of the API.
	if code, _ := post(strings.TrimSuffix(ep.ConfigHubURL, "/api")+"/api/apply?space=prod-us-east&unit=redis", token); code != 404 {
		t.Fatalf("the worker route under the API's base: %d, want 404", code)
	}
	resp, err := http.Get(ep.APIURL + "rate_limit")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-GitHub-Request-Id") == "" {
		t.Fatalf("the hub's own API beside the stand-in: %s without the hub's request ID", resp.Status)
	}
}
