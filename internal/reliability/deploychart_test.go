package reliability

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/render"
)

// deployValues are the values every install of the backflow chart gives,
// with the kube watch the webhook needs and the webhook on.
const deployValues = `
github: {appId: 123456}
credentials:
  privateKey: "-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n"
  webhookSecret: s3cret
kube:
  enabled: true
  cluster: prod-us-east-1
  objects:
    - {apiVersion: apps/v1, kind: StatefulSet, namespace: redis, name: "redis-*"}
admission: {enabled: true}
`

// renderDeployChart renders deploy/chart/backflow, as helm install does
// (its values.schema.json enforced), with deployValues and more.
func renderDeployChart(t *testing.T, more string) (map[string]map[string]any, error) {
	t.Helper()
	c, err := render.LoadFromSource(render.DirSource{Root: "../../deploy/chart"}, "backflow")
	if err != nil {
		t.Fatal(err)
	}
	var vals []map[string]any
	for _, doc := range []string{deployValues, more} {
		var v map[string]any
		if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		vals = append(vals, v)
	}
	r, err := c.Render(context.Background(), render.Options{Release: "bf", Namespace: "backflow"}, vals)
	if err != nil {
		return nil, err
	}
	return r.Objects, nil
}

// Case 28: the chart with the admission webhook on and otherwise default
// values renders a NetworkPolicy that admits the webhook's port only from
// networkPolicy.admissionFrom; values with the webhook on and no source
// ranges (none, or an empty list), or with a peer that admits everyone
// (every namespace, every IPv4 or IPv6 address, an empty peer), are refused
// by the chart's schema naming admissionFrom; a client CA value reaches the
// admission listener's clientCAFile.
func TestCase28AdmissionPortClosedByDefault(t *testing.T) {
	objs, err := renderDeployChart(t, "networkPolicy: {admissionFrom: [{ipBlock: {cidr: 172.16.0.0/28}}]}\n")
	if err != nil {
		t.Fatal(err)
	}
	policies, peers, open := 0, 0, 0
	for key, o := range objs {
		if !strings.Contains(key, "|NetworkPolicy|") {
			continue
		}
		policies++
		spec, _ := o["spec"].(map[string]any)
		rules, _ := spec["ingress"].([]any)
		for _, r := range rules {
			rule, _ := r.(map[string]any)
			ports := fmt.Sprint(rule["ports"])
			from, _ := rule["from"].([]any)
			if strings.Contains(ports, "port:8443") {
				peers += len(from)
				if len(from) == 0 {
					open++
				}
			}
		}
	}
	if policies != 1 || peers != 1 || open != 0 {
		t.Errorf("with the webhook on: %d NetworkPolicy, %d peers of 8443, %d rules open to every pod; want 1, 1, 0", policies, peers, open)
	}
	refused := 0
	cases := []string{"", "networkPolicy: {admissionFrom: []}\n", "networkPolicy: {enabled: true}\n"}
	for _, more := range cases {
		_, err := renderDeployChart(t, more)
		if err == nil || !strings.Contains(err.Error(), "admissionFrom") {
			t.Errorf("the webhook on with %q: %v, want the values refused naming admissionFrom", more, err)
			continue
		}
		refused++
	}
	wideOpen := 0
	wide := []string{
		"networkPolicy: {admissionFrom: [{namespaceSelector: {}}]}\n",
		"networkPolicy: {admissionFrom: [{namespaceSelector: {matchLabels: {}}}]}\n",
		"networkPolicy: {admissionFrom: [{ipBlock: {cidr: 0.0.0.0/0}}]}\n",
		"networkPolicy: {admissionFrom: [{ipBlock: {cidr: '::/0'}}]}\n",
		"networkPolicy: {admissionFrom: [{}]}\n",
		"networkPolicy: {admissionFrom: [{ipBlock: {cidr: 172.16.0.0/28}}, {ipBlock: {cidr: 0.0.0.0/0}}]}\n",
	}
	for _, more := range wide {
		_, err := renderDeployChart(t, more)
		if err == nil || !strings.Contains(err.Error(), "admissionFrom") {
			t.Errorf("the webhook on with %q: %v, want the values refused naming admissionFrom", more, err)
			continue
		}
		wideOpen++
	}
	const ca = "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n"
	objs, err = renderDeployChart(t, fmt.Sprintf("networkPolicy: {admissionFrom: [{ipBlock: {cidr: 172.16.0.0/28}}]}\nadmission: {enabled: true, clientCA: %q}\n", ca))
	if err != nil {
		t.Fatal(err)
	}
	wired := 0
	cm, _ := objs["v1|ConfigMap|backflow|bf-backflow"]["data"].(map[string]any)
	if cfg, err := botconfig.ParseConfig("ConfigMap config.yaml", []byte(fmt.Sprint(cm["config.yaml"]))); err != nil {
		t.Errorf("the rendered config: %v", err)
	} else if f := cfg.Admission.ClientCAFile; f == "/etc/backflow/admission-client-ca.crt" && cm["admission-client-ca.crt"] == ca {
		wired++
	} else {
		t.Errorf("admission.clientCAFile %q, the ConfigMap's CA %q", f, cm["admission-client-ca.crt"])
	}
	report(t, "28", "admission-port-closed-by-default", "network_policies_with_webhook_on", policies, "admission_port_peers", peers,
		"rules_open_to_every_pod", open, "values_refused_without_source_ranges", fmt.Sprintf("%d/%d", refused, len(cases)),
		"wide_open_peers_refused", fmt.Sprintf("%d/%d", wideOpen, len(wide)), "client_ca_wired", wired)
}

// The chart's confighub values reach the bot config as the loader reads
// it, the token only as the Secret's confighub-token file; a URL without
// a token, or with credentials in it, is refused naming the value.
func TestDeployChartConfigHub(t *testing.T) {
	const token = "chart-confighub-token-canary"
	// The deploy values turn the webhook on, which needs its peers.
	const np = "networkPolicy: {admissionFrom: [{ipBlock: {cidr: 172.16.0.0/28}}]}\n"
	objs, err := renderDeployChart(t, np+"confighub: {url: \"https://hub.confighub.com/api\", timeout: 10s, maxDataSize: 1048576}\n"+
		"credentials: {confighubToken: "+token+"}\n")
	if err != nil {
		t.Fatal(err)
	}
	cm, _ := objs["v1|ConfigMap|backflow|bf-backflow"]["data"].(map[string]any)
	cfg, err := botconfig.ParseConfig("ConfigMap config.yaml", []byte(fmt.Sprint(cm["config.yaml"])))
	if err != nil {
		t.Fatalf("the rendered config: %v", err)
	}
	if h := cfg.ConfigHub; h.URL != "https://hub.confighub.com/api" || h.TokenFile != "/var/run/secrets/backflow/confighub-token" ||
		h.Timeout.Duration != 10*time.Second || h.MaxDataSize != 1048576 {
		t.Errorf("the rendered confighub section: %+v", h)
	}
	if strings.Contains(fmt.Sprint(cm), token) {
		t.Error("the token is in the ConfigMap")
	}
	sec, _ := objs["v1|Secret|backflow|bf-backflow"]["data"].(map[string]any)
	if got, _ := base64.StdEncoding.DecodeString(fmt.Sprint(sec["confighub-token"])); string(got) != token {
		t.Errorf("the Secret's confighub-token is %q", got)
	}
	objs, err = renderDeployChart(t, np)
	if err != nil {
		t.Fatal(err)
	}
	cm, _ = objs["v1|ConfigMap|backflow|bf-backflow"]["data"].(map[string]any)
	sec, _ = objs["v1|Secret|backflow|bf-backflow"]["data"].(map[string]any)
	if strings.Contains(fmt.Sprint(cm["config.yaml"]), "confighub") || sec["confighub-token"] != nil {
		t.Errorf("without confighub.url the chart renders a ConfigHub section or token")
	}
	for _, tc := range []struct{ why, values, want string }{
		{"a URL without its token", "confighub: {url: \"https://hub.example/api\"}\n", "credentials.confighubToken"},
		{"credentials in the URL", "confighub: {url: \"https://me:tok@hub.example/api\"}\ncredentials: {confighubToken: t}\n",
			"confighub"},
		{"a timeout that is no duration", "confighub: {url: \"https://hub.example/api\", timeout: soon}\n" +
			"credentials: {confighubToken: t}\n", "timeout"},
	} {
		if _, err := renderDeployChart(t, np+tc.values); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.why, err, tc.want)
		}
	}
}
