package e2e

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	repoName  = "acme/gitops"
	valuesRel = "envs/prod-us-east/redis/values.yaml"
	policyRel = ".github/reverse-reconcile-policy.yaml"
	// Labels and check names the bot uses.
	labelProven = "reverse-reconcile:proven"
	labelDrift  = "reverse-reconcile:drift"
)

// endpoints is the JSON line backflow localhub prints when it is up.
type endpoints struct {
	APIURL            string `json:"apiURL"`
	GraphQLURL        string `json:"graphqlURL"`
	GitURL            string `json:"gitURL"`
	AppID             int64  `json:"appID"`
	InstallationID    int64  `json:"installationID"`
	PrivateKeyPath    string `json:"privateKeyPath"`
	WebhookSecretPath string `json:"webhookSecretPath"`
	// With --confighub-unit: the ConfigHub stand-in's API, its worker
	// route and the file holding its bearer token.
	ConfigHubURL       string `json:"confighubURL"`
	ConfigHubApplyURL  string `json:"confighubApplyURL"`
	ConfigHubTokenPath string `json:"confighubTokenPath"`
}

// startHub runs backflow localhub with the test's repository, delivering
// webhooks to webhookURL, and returns its endpoints.
func startHub(t *testing.T, bin, webhookURL string) endpoints {
	t.Helper()
	return startHubWith(t, bin, webhookURL, "repo")
}

// startHubWith is startHub serving the folder repoDir as the repository,
// with the extra arguments given.
func startHubWith(t *testing.T, bin, webhookURL, repoDir string, extra ...string) endpoints {
	t.Helper()
	dir := t.TempDir()
	repo, err := filepath.Abs(repoDir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "localhub.out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	args := []string{"localhub", "--listen", "127.0.0.1:0", "--dir", filepath.Join(dir, "state"),
		"--repo", repoName + "=" + repo, "--webhook-url", webhookURL}
	cmd := exec.Command(bin, append(args, extra...)...)
	cmd.Stdout = f
	startProcess(t, dir, "localhub", cmd)
	var ep endpoints
	eventually(t, 30*time.Second, "localhub's endpoints line", func() error {
		data, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		line, _, _ := bytes.Cut(data, []byte("\n"))
		if !bytes.HasSuffix(bytes.TrimSpace(data), []byte("}")) {
			return errors.New("no line yet")
		}
		return json.Unmarshal(line, &ep)
	})
	return ep
}

// serveConfig writes backflow serve's config: the App at the local hub, the
// cluster watched directly with the backflow identity, how live changes are
// attributed (attribution: the audit: or admission: section, whose relative
// paths name files written beside the config), and a schedule slow enough
// that only the watch and the webhooks start timely cycles.
func serveConfig(t *testing.T, ep endpoints, c *cluster, listen, attribution string, files map[string][]byte) string {
	t.Helper()
	w := serveWatch{pattern: "apps/v1|StatefulSet|" + namespace + "|redis-*", manager: gitopsManager, schedule: "@every 30s"}
	return serveConfigFor(t, ep, c, listen, w, attribution, files)
}

// serveWatch is what backflow serve watches and how often it cycles
// unprompted: the objects matching pattern, manager the GitOps
// controller's field manager, schedule the cycles' cron schedule.
type serveWatch struct{ pattern, manager, schedule string }

// serveConfigFor is serveConfig with the watch w.
func serveConfigFor(t *testing.T, ep endpoints, c *cluster, listen string, w serveWatch, attribution string, files map[string][]byte) string {
	t.Helper()
	base := ep.APIURL
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	cfg := fmt.Sprintf(`version: 1
github:
  appId: %d
  privateKeyFile: %s
  baseURL: %s
  graphqlURL: %s
  gitURL: %s
  appSlug: backflow
repositories: [%s]
gitopsManagers: [%s]
observations:
  prod-us-east-1:
    - kube:
        kubeconfig: %s
        context: %s
        objects: [%q]
%s
server:
  listen: %s
  schedule: %q
  jitter: 0s
  webhook:
    secretFile: %s
`, ep.AppID, ep.PrivateKeyPath, base, ep.GraphQLURL, ep.GitURL, repoName, w.manager,
		c.kubeconfig, userBackflow, w.pattern, strings.TrimSpace(attribution), listen, w.schedule, ep.WebhookSecretPath)
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "backflow.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startServe runs backflow serve and waits for /readyz.
func startServe(t *testing.T, bin, config, listen string) string {
	t.Helper()
	logPath := startProcess(t, filepath.Dir(config), "serve", exec.Command(bin, "serve", "--config", config))
	awaitReady(t, listen, "backflow serve ready")
	return logPath
}

// hubClient reads the local hub's REST API as the App's installation.
type hubClient struct {
	ep    endpoints
	key   *rsa.PrivateKey
	token string
	until time.Time
	http  *http.Client
}

func newHubClient(t *testing.T, ep endpoints) *hubClient {
	t.Helper()
	data, err := os.ReadFile(ep.PrivateKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("the App's key is not PEM")
	}
	key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		k8, err8 := x509.ParsePKCS8PrivateKey(block.Bytes)
		rk, ok := k8.(*rsa.PrivateKey)
		if err8 != nil || !ok {
			t.Fatalf("the App's key: %v", err)
		}
		key = rk
	}
	return &hubClient{ep: ep, key: key, http: &http.Client{Timeout: 20 * time.Second}}
}

// jwt is the App's RS256 token, as GitHub wants it.
func (h *hubClient) jwt() (string, error) {
	enc := base64.RawURLEncoding
	now := time.Now()
	header := enc.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`))
	claims := enc.EncodeToString([]byte(fmt.Sprintf(`{"iat":%d,"exp":%d,"iss":"%d"}`, now.Add(-30*time.Second).Unix(), now.Add(5*time.Minute).Unix(), h.ep.AppID)))
	sum := sha256.Sum256([]byte(header + "." + claims))
	sig, err := rsa.SignPKCS1v15(rand.Reader, h.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return header + "." + claims + "." + enc.EncodeToString(sig), nil
}

func (h *hubClient) installationToken() (string, error) {
	if h.token != "" && time.Now().Before(h.until) {
		return h.token, nil
	}
	jwt, err := h.jwt()
	if err != nil {
		return "", err
	}
	var tok struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := h.call(http.MethodPost, fmt.Sprintf("/app/installations/%d/access_tokens", h.ep.InstallationID), "Bearer "+jwt, nil, &tok); err != nil {
		return "", err
	}
	h.token, h.until = tok.Token, tok.ExpiresAt.Add(-time.Minute)
	return h.token, nil
}

func (h *hubClient) call(method, path, auth string, payload []byte, out any) error {
	req, err := http.NewRequest(method, strings.TrimSuffix(h.ep.APIURL, "/")+path, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", auth)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	resp, err := h.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, body)
	}
	return json.Unmarshal(body, out)
}

func (h *hubClient) get(t *testing.T, path string, out any) error {
	tok, err := h.installationToken()
	if err != nil {
		return err
	}
	return h.call(http.MethodGet, path, "token "+tok, nil, out)
}

// send writes through the hub's REST API: method on path with the JSON of
// body, as the App's installation (the hub's process issues no person
// tokens; backflow tells its own closes apart by the marker it writes
// when it closes one, not by the token). out, when not nil, gets the answer.
func (h *hubClient) send(method, path string, body, out any) error {
	tok, err := h.installationToken()
	if err != nil {
		return err
	}
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	if out == nil {
		out = &json.RawMessage{}
	}
	return h.call(method, path, "token "+tok, data, out)
}

type pull struct {
	Number   int        `json:"number"`
	State    string     `json:"state"`
	Title    string     `json:"title"`
	Body     string     `json:"body"`
	MergedAt *time.Time `json:"merged_at"`
	// MergeCommit is the commit the merge made on the base branch.
	MergeCommit string    `json:"merge_commit_sha"`
	Created     time.Time `json:"created_at"`
	Labels      []struct {
		Name string `json:"name"`
	} `json:"labels"`
	Head struct {
		Ref string `json:"ref"`
	} `json:"head"`
}

func (h *hubClient) pulls(t *testing.T) ([]pull, error) {
	var out []pull
	err := h.get(t, "/repos/"+repoName+"/pulls?state=all&per_page=100", &out)
	return out, err
}

type comment struct {
	Body string `json:"body"`
}

func (h *hubClient) comments(t *testing.T, number int) ([]comment, error) {
	var out []comment
	err := h.get(t, fmt.Sprintf("/repos/%s/issues/%d/comments?per_page=100", repoName, number), &out)
	return out, err
}

type issue struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	State  string `json:"state"`
}

func (h *hubClient) driftIssues(t *testing.T) ([]issue, error) {
	var out []issue
	err := h.get(t, "/repos/"+repoName+"/issues?state=all&labels="+labelDrift, &out)
	return out, err
}

// file reads path on the default branch.
func (h *hubClient) file(t *testing.T, path string) ([]byte, error) {
	var c struct {
		Content  string `json:"content"`
		Encoding string `json:"encoding"`
	}
	if err := h.get(t, "/repos/"+repoName+"/contents/"+path+"?ref=main", &c); err != nil {
		return nil, err
	}
	if c.Encoding != "base64" {
		return nil, fmt.Errorf("%s: encoding %q", path, c.Encoding)
	}
	return base64.StdEncoding.DecodeString(strings.ReplaceAll(c.Content, "\n", ""))
}

// provenReceipts are the fenced YAML receipts with status proven in a
// comment body.
func provenReceipts(body string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	var cur *strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(strings.TrimSpace(line), "```yaml"):
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(line) == "```":
			doc := cur.String()
			if strings.Contains(doc, "kind: ReverseReconcileReceipt") && strings.Contains(doc, "status: proven") {
				out = append(out, doc)
			}
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return out
}
