package cli

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/cliroot"
)

// appManifest is config/github-app-manifest.json (a test keeps the two
// equal): what "backflow app create" registers.
//
//go:embed app-manifest.json
var appManifest []byte

func newAppCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "app",
		Short: "Create the GitHub App backflow runs as",
		Long: `app works with the GitHub App backflow runs as: "app create" registers it
with GitHub's manifest flow and writes its credentials where the bot config
and the Helm chart read them.`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(cliroot.Streaming(newAppCreateCmd()))
	return cmd
}

type appCreateFlags struct {
	org, publicURL, githubURL, apiURL, out, listen, name, namespace, secretName string
}

func newAppCreateCmd() *cobra.Command {
	var f appCreateFlags
	cmd := &cobra.Command{
		Use:   "create --org ORG [--url URL] [--out DIR] [--github-url URL --api-url URL]",
		Short: "Register the GitHub App from its manifest and write its credentials",
		Long: `create runs GitHub's App manifest flow for the organization ORG. It serves a
one-page form on loopback (the address is printed on stdout: open it in a
browser on this machine, signed in to GitHub as an owner of ORG); the form
posts config/github-app-manifest.json, with the webhook URL set to
URL/webhook, to GitHub's /organizations/ORG/settings/apps/new. Once you
confirm there, GitHub sends the browser back with a one-time code, which is
exchanged through POST /app-manifests/{code}/conversions for the App's id,
private key and webhook secret. Without --url the App's webhook is created
inactive: set its URL in the App's settings once backflow is reachable.

Written to DIR (default .), where the bot config and the Helm chart read them:

  app-id            the App's id (github.appId)
  private-key.pem   the App's private key (mode 0600)
  webhook-secret    the webhook secret (mode 0600)
  backflow.yaml     a bot config naming them (github.appId, privateKeyFile,
                    server.webhook.secretFile), for backflow run and serve
  secret.yaml       a Kubernetes Secret (--secret-name in --namespace) with
                    the chart's keys private-key.pem and webhook-secret:
                    kubectl apply -f DIR/secret.yaml, then install the chart
                    with credentials.existingSecret and github.appId

None is written when any of them exists already, at start or when they are
written (each is linked into place only if its name is free; if one is not,
none lands), so two runs into one folder keep the first App's files. The
page answers only requests addressed to a loopback name on its port
(localhost, 127.0.0.0/8, [::1]); any other Host is refused with 421, so a
site that rebinds its own name to 127.0.0.1 cannot read it. For GitHub Enterprise
Server use --github-url https://HOST and --api-url https://HOST/api/v3/; the
local hub (backflow localhub) serves the flow too.

Exit 0: the App was created and its files written; 2: a flag is wrong, a
file exists, the code could not be exchanged, or the flow was interrupted.`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runAppCreate(ctx, cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.org, "org", "", "the GitHub organization that owns the App (required)")
	fl.StringVar(&f.publicURL, "url", "", "backflow's public HTTPS base URL; the webhook is URL/webhook")
	fl.StringVar(
		&f.githubURL,
		"github-url",
		"https://github.com",
		"GitHub's web URL (https://HOST for GitHub Enterprise Server)",
	)
	fl.StringVar(
		&f.apiURL,
		"api-url",
		"https://api.github.com/",
		"GitHub's REST API URL (https://HOST/api/v3/ for GitHub Enterprise Server)",
	)
	fl.StringVar(&f.out, "out", ".", "folder the credentials are written to")
	fl.StringVar(&f.listen, "listen", "127.0.0.1:0", "loopback address of the local form page")
	fl.StringVar(&f.name, "name", "", "the App's name (default: the manifest's, backflow; names are unique on GitHub)")
	fl.StringVar(&f.namespace, "namespace", "backflow", "namespace of the Secret in secret.yaml")
	fl.StringVar(
		&f.secretName,
		"secret-name",
		"backflow-app",
		"name of the Secret in secret.yaml (the chart's credentials.existingSecret)",
	)
	return cmd
}

// appFiles are the files create writes, in DIR.
var appFiles = []string{"app-id", "private-key.pem", "webhook-secret", "backflow.yaml", "secret.yaml"}

func runAppCreate(ctx context.Context, stdout io.Writer, f appCreateFlags) error {
	if f.org == "" {
		return cliroot.UsageError("app create: --org is required")
	}
	if strings.ContainsAny(f.org, "/?#") {
		return cliroot.UsageError("app create: --org %q: want an organization's login", f.org)
	}
	urls := []struct{ flag, v string }{{"--github-url", f.githubURL}, {"--api-url", f.apiURL}, {"--url", f.publicURL}}
	for _, u := range urls {
		if u.v == "" && u.flag == "--url" {
			continue
		}
		p, err := url.Parse(u.v)
		if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return cliroot.UsageError("app create: %s %q: want an http(s) URL", u.flag, u.v)
		}
	}
	if info, err := os.Stat(f.out); err != nil || !info.IsDir() {
		return cliroot.UsageError("app create: --out %s: %s", f.out, notADir(err))
	}
	for _, name := range appFiles {
		if _, err := os.Lstat(filepath.Join(f.out, name)); err == nil {
			return cliroot.UsageError(
				"app create: %s exists: refusing to overwrite an App's credentials",
				filepath.Join(f.out, name),
			)
		}
	}
	host, _, err := net.SplitHostPort(f.listen)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return cliroot.UsageError("app create: --listen %q: want a loopback address (127.0.0.1:PORT)", f.listen)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return cliroot.UsageError("app create: --listen %s: %v", f.listen, err)
	}
	local := "http://" + ln.Addr().String()
	state := randomToken()
	manifest, err := fillManifest(appManifest, f.name, f.publicURL, local+"/callback")
	if err != nil {
		ln.Close()
		return cliroot.UsageError("app create: the manifest: %v", err)
	}
	action := strings.TrimSuffix(f.githubURL, "/") + "/organizations/" + url.PathEscape(f.org) +
		"/settings/apps/new?state=" + state

	done := make(chan error, 1)
	finish := func(err error) {
		select {
		case done <- err:
		default:
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = formPage.Execute(w, map[string]string{"Action": action, "Manifest": string(manifest), "Org": f.org})
	})
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("state") != state || q.Get("code") == "" {
			http.Error(w, "this is not the answer to the form this process served", http.StatusBadRequest)
			return
		}
		app, err := convertManifest(r.Context(), f.apiURL, q.Get("code"))
		if err == nil {
			err = writeAppFiles(f, app)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			_ = donePage.Execute(w, map[string]any{"Err": err.Error()})
			finish(err)
			return
		}
		_ = donePage.Execute(w, map[string]any{"App": app, "Out": f.out})
		finish(nil)
	})
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	srv := &http.Server{Handler: loopbackOnly(port, mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(stdout, "Open %s/ in a browser on this machine to create the GitHub App in %s.\n", local, f.org)
	select {
	case err := <-done:
		if err != nil {
			return cliroot.UsageError("app create: %v", err)
		}
	case <-ctx.Done():
		return cliroot.UsageError("app create: interrupted before GitHub answered; nothing was written")
	}
	fmt.Fprintf(
		stdout,
		"Created the GitHub App; its id, private key and webhook secret are in %s (%s).\n",
		f.out,
		strings.Join(appFiles, ", "),
	)
	return nil
}

// loopbackOnly answers only requests whose Host is a loopback name on
// port (localhost, 127.0.0.0/8, [::1]) and refuses any other with 421: a
// page a browser opened elsewhere that rebinds its own name to 127.0.0.1
// sends that name, and must not read the form's state or drive the
// callback (DNS rebinding).
func loopbackOnly(port string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, p, err := net.SplitHostPort(r.Host)
		ip := net.ParseIP(host)
		if err != nil || p != port || (!strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback())) {
			http.Error(w, "this page answers only on this machine's loopback address", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fillManifest sets the App's name, its webhook (inactive without a
// public URL) and the flow's redirect in the manifest.
func fillManifest(data []byte, name, publicURL, redirect string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if name != "" {
		m["name"] = name
	}
	hook := map[string]any{"active": false}
	if publicURL != "" {
		hook = map[string]any{"url": strings.TrimSuffix(publicURL, "/") + "/webhook", "active": true}
	}
	m["hook_attributes"] = hook
	m["redirect_url"] = redirect
	return json.Marshal(m)
}

// createdApp is the part of the conversion's answer create keeps.
type createdApp struct {
	ID            int64  `json:"id"`
	Slug          string `json:"slug"`
	Name          string `json:"name"`
	HTMLURL       string `json:"html_url"`
	PEM           string `json:"pem"`
	WebhookSecret string `json:"webhook_secret"`
}

// convertManifest exchanges the code (no credentials: the code is one).
func convertManifest(ctx context.Context, apiURL, code string) (*createdApp, error) {
	u := strings.TrimSuffix(apiURL, "/") + "/app-manifests/" + url.PathEscape(code) + "/conversions"
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("exchanging the code: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("exchanging the code: %w", err)
	}
	if resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("exchanging the code: POST %s: %s: %.300s", u, resp.Status, body)
	}
	var app createdApp
	if err := json.Unmarshal(body, &app); err != nil {
		return nil, fmt.Errorf("exchanging the code: the answer is not JSON: %w", err)
	}
	if app.ID == 0 || !strings.Contains(app.PEM, "PRIVATE KEY") {
		return nil, errors.New("exchanging the code: the answer has no App id or private key")
	}
	return &app, nil
}

// writeAppFiles writes every file or none: each goes to a temporary name
// first, and all are renamed once all are written.
func writeAppFiles(f appCreateFlags, app *createdApp) error {
	bot := fmt.Sprintf(`# The bot config of the GitHub App %q, written by backflow app create.
# Add repositories and observations (config/README.md); relative paths are
# read from this file's folder.
version: 1
github:
  appId: %d
  appSlug: %s
  privateKeyFile: private-key.pem
server:
  webhook:
    secretFile: webhook-secret
`, app.Name, app.ID, app.Slug)
	if api := strings.TrimSuffix(f.apiURL, "/"); api != "https://api.github.com" {
		bot = strings.Replace(bot, "  privateKeyFile:", "  baseURL: "+api+"/\n  privateKeyFile:", 1)
	}
	secret := fmt.Sprintf(`# The GitHub App %q's credentials, with the keys the Helm chart reads
# (credentials.existingSecret: %s). kubectl apply -f secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: %s
  namespace: %s
type: Opaque
data:
  private-key.pem: %s
  webhook-secret: %s
`, app.Name, f.secretName, f.secretName, f.namespace,
		base64.StdEncoding.EncodeToString([]byte(app.PEM)), base64.StdEncoding.EncodeToString([]byte(app.WebhookSecret)))
	contents := map[string][]byte{
		"app-id":          []byte(fmt.Sprintf("%d\n", app.ID)),
		"private-key.pem": []byte(app.PEM),
		"webhook-secret":  []byte(app.WebhookSecret),
		"backflow.yaml":   []byte(bot),
		"secret.yaml":     []byte(secret),
	}
	return writeNew(f.out, appFiles, contents)
}

// writeNew writes files into dir, each under names[i], all or none, and
// never over an existing file, even one that appears while it writes: each
// file is written whole under a private folder in dir, then hard-linked to
// its name, which fails when the name exists (the check and the write are
// one step). When one link fails, the links already made are removed and
// nothing lands. Two runs into one folder thus keep the first one's files
// (the links are made in one order, so the second fails at the first).
func writeNew(dir string, names []string, contents map[string][]byte) error {
	tmp, err := os.MkdirTemp(dir, ".backflow-app-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, name := range names {
		// 0600: the key and secrets stay private, and the link keeps it.
		if err := os.WriteFile(filepath.Join(tmp, name), contents[name], 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
		}
	}
	var linked []string
	undo := func() {
		for _, name := range linked {
			// Only what this call linked: a file that replaced it since is
			// someone else's.
			a, errA := os.Lstat(filepath.Join(dir, name))
			b, errB := os.Lstat(filepath.Join(tmp, name))
			if errA == nil && errB == nil && os.SameFile(a, b) {
				os.Remove(filepath.Join(dir, name))
			}
		}
	}
	for _, name := range names {
		if err := os.Link(filepath.Join(tmp, name), filepath.Join(dir, name)); err != nil {
			undo()
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf(
					"%s exists: refusing to overwrite an App's credentials; nothing was written",
					filepath.Join(dir, name),
				)
			}
			return fmt.Errorf("writing %s: %w; nothing was written", filepath.Join(dir, name), err)
		}
		linked = append(linked, name)
	}
	return nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail
	return hex.EncodeToString(b)
}

var formPage = template.Must(template.New("form").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Create the backflow GitHub App</title></head>
<body>
<h1>Create the backflow GitHub App in {{.Org}}</h1>
<p>This posts backflow's App manifest to GitHub. Confirm there; GitHub then
sends you back here and backflow app create writes the App's credentials.</p>
<form id="manifest" action="{{.Action}}" method="post">
<input type="hidden" name="manifest" value="{{.Manifest}}">
<button type="submit">Create the App on GitHub</button>
</form>
<script>document.getElementById("manifest").submit()</script>
</body></html>
`))

var donePage = template.Must(template.New("done").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>backflow app create</title></head>
<body>
{{if .Err}}<h1>The App could not be set up</h1><p>{{.Err}}</p>
{{else}}<h1>Created {{.App.Name}} (id {{.App.ID}})</h1>
<p>Its credentials are in {{.Out}}. You can close this page; install the App
on your GitOps repositories from <a href="{{.App.HTMLURL}}">its page</a>.</p>{{end}}
</body></html>
`))
