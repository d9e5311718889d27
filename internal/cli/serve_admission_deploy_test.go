package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/botconfig"
)

// readDocs reads every YAML document of a manifest file.
func readDocs(t *testing.T, rel string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		out = append(out, doc)
	}
}

// TestAdmissionManifests keeps deploy/admission doing its job: a webhook
// that can never block a change, limited to updates outside the system
// namespaces, its CA injected from the Certificate whose Secret the pod
// mounts, the port admitted only by a NetworkPolicy, and a config that
// serves it there from those files.
func TestAdmissionManifests(t *testing.T) {
	const dir = "deploy/admission"
	kust := readYAML(t, dir+"/kustomization.yaml")
	byKind := map[string]map[string]any{}
	for _, r := range dig(t, kust, "resources").([]any) {
		if strings.HasPrefix(r.(string), "../") {
			continue
		}
		for _, doc := range readDocs(t, filepath.Join(dir, r.(string))) {
			byKind[doc["kind"].(string)] = doc
		}
	}
	for _, p := range dig(t, kust, "patches").([]any) {
		doc := readYAML(t, filepath.Join(dir, p.(map[string]any)["path"].(string)))
		byKind[doc["kind"].(string)+" patch"] = doc
	}
	hook := byKind["ValidatingWebhookConfiguration"]
	if hook == nil {
		t.Fatal("no ValidatingWebhookConfiguration")
	}
	w := dig(t, hook, "webhooks", 0)
	for key, want := range map[string]any{"failurePolicy": "Ignore", "sideEffects": "None"} {
		if got := dig(t, w, key); got != want {
			t.Errorf("webhook %s %v, want %v", key, got, want)
		}
	}
	if n := dig(t, w, "timeoutSeconds").(int); n > 5 {
		t.Errorf("timeoutSeconds %d: a slow webhook slows every write; want at most 5", n)
	}
	for _, r := range dig(t, w, "rules").([]any) {
		if ops := dig(t, r, "operations").([]any); len(ops) != 1 || ops[0] != "UPDATE" {
			t.Errorf("rule operations %v, want [UPDATE]", ops)
		}
	}
	excluded := dig(t, w, "namespaceSelector", "matchExpressions", 0, "values").([]any)
	if !slices.Contains(excluded, any("kube-system")) {
		t.Errorf("namespaceSelector does not exclude kube-system: %v", excluded)
	}
	if dig(t, w, "matchConditions") == nil {
		t.Error("no matchConditions")
	}
	cert := byKind["Certificate"]
	inject := dig(t, hook, "metadata", "annotations", "cert-manager.io/inject-ca-from")
	if inject != "backflow/"+dig(t, cert, "metadata", "name").(string) {
		t.Errorf("inject-ca-from %v does not name the Certificate", inject)
	}
	svc := byKind["Service"]
	if dig(t, w, "clientConfig", "service", "name") != dig(t, svc, "metadata", "name") || dig(t, w, "clientConfig", "service", "path") != "/admission" {
		t.Error("clientConfig does not call the admission Service at /admission")
	}
	np := byKind["NetworkPolicy"]
	if got := dig(t, np, "spec", "ingress", 0, "ports", 0, "port"); got != 8443 {
		t.Errorf("NetworkPolicy admits port %v, want 8443", got)
	}
	if dig(t, np, "spec", "ingress", 0, "from") == nil {
		t.Error("the NetworkPolicy admits the webhook port from anywhere")
	}
	pod := dig(t, byKind["Deployment patch"], "spec", "template", "spec")
	secret := dig(t, pod, "volumes", 0, "secret", "secretName")
	if secret != dig(t, cert, "spec", "secretName") {
		t.Errorf("the pod mounts Secret %v, the Certificate writes %v", secret, dig(t, cert, "spec", "secretName"))
	}
	mount := dig(t, pod, "containers", 0, "volumeMounts", 0, "mountPath").(string)
	text := dig(t, byKind["ConfigMap patch"], "data", "config.yaml").(string)
	bc, err := botconfig.ParseConfig("deploy/admission config.yaml", []byte(text))
	if err != nil {
		t.Fatalf("the admission config is not a valid bot config: %v", err)
	}
	if !strings.HasPrefix(bc.Admission.CertFile, mount+"/") || !strings.HasPrefix(bc.Admission.KeyFile, mount+"/") {
		t.Errorf("admission cert %s and key %s are not in the mounted Secret %s", bc.Admission.CertFile, bc.Admission.KeyFile, mount)
	}
	if !strings.HasSuffix(bc.Admission.Listen, ":8443") || dig(t, pod, "containers", 0, "ports", 0, "containerPort") != 8443 {
		t.Errorf("admission.listen %q and the container port disagree", bc.Admission.Listen)
	}
	if _, err := botconfig.ParseServerSection("deploy/admission config.yaml", []byte(text)); err != nil {
		t.Fatalf("the admission config's server section: %v", err)
	}
}
