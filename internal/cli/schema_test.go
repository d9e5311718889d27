package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/schematest"
)

// schemaOf compiles what "backflow config schema --kind KIND" prints.
func schemaOf(t *testing.T, kind string) *jsonschema.Schema {
	t.Helper()
	code, out, errOut := runCLI(t, "config", "schema", "--kind", kind)
	if code != 0 {
		t.Fatalf("config schema --kind %s: exit %d: %s", kind, code, errOut)
	}
	return schematest.Compile(t, "schema.json", []byte(out))
}

// Each schema accepts the example the repository ships for its file (which
// the loader accepts too) and rejects the same file with a misspelt key,
// which the loader rejects as well.
func TestConfigSchemasAcceptExamplesAndRejectTypos(t *testing.T) {
	botServe := "version: 1\ngithub:\n  appId: 7\n  privateKeyFile: app.pem\nserver:\n  listen: :8080\n  jitter: 0\n  shutdownTimeout: 30s\n  webhook: {secretFile: hook}\n  observations: {tokenFile: token, trust: audit-log}\n"
	botHub := "version: 1\ngithub:\n  appId: 7\n  privateKeyFile: app.pem\nconfighub:\n  url: https://hub.confighub.com/api\n" +
		"  tokenFile: confighub-token\n  timeout: 10s\n  maxDataSize: 1048576\n"
	repoHub := strings.NewReplacer("    valuesFiles:\n      - envs/prod-us-east/redis/values.yaml\n",
		"    confighub: {space: prod-us-east, unit: redis}\n",
		"    chart:\n      name: bitnami/redis\n      version: \"25.5.3\"\n  - name: redis\n    environment: prod-eu-west\n",
		"  - name: redis\n    environment: prod-eu-west\n").Replace(string(read(t, "../../config/repo/backflow.yaml")))
	if !strings.Contains(repoHub, "confighub: {space: prod-us-east, unit: redis}\n    objects:") {
		t.Fatalf("the example repo config changed shape:\n%s", repoHub)
	}
	for _, tc := range []struct {
		kind, name string
		data       []byte
		load       func([]byte) error // the loader's verdict on the same bytes
		typo       [2]string          // a key as written, and misspelt
	}{
		{"repo", "config/repo/backflow.yaml", read(t, "../../config/repo/backflow.yaml"), func(b []byte) error { _, err := repoconfig.Parse("backflow.yaml", b); return err }, [2]string{"\nunits:", "\nunit:"}},
		{"policy", "config/repo/reverse-reconcile-policy.yaml", read(t, "../../config/repo/reverse-reconcile-policy.yaml"), func(b []byte) error { _, err := policy.Parse("p.yaml", b); return err }, [2]string{"valuePath:", "valuepath:"}},
		{"policy", "every policy extension", read(t, "../../internal/policy/testdata/bounds-and-globs.yaml"), func(b []byte) error { _, err := policy.Parse("p.yaml", b); return err }, [2]string{"pattern:", "patern:"}},
		{"bot", "config/bot/backflow.yaml", read(t, "../../config/bot/backflow.yaml"), func(b []byte) error { _, err := botconfig.ParseConfig("b.yaml", b); return err }, [2]string{"appId:", "appID:"}},
		{"bot", "a serve config", []byte(botServe), func(b []byte) error { _, err := botconfig.ParseServerSection("b.yaml", b); return err }, [2]string{"shutdownTimeout:", "shutdownTimout:"}},
		// The token by a file, never inline: "token:" is no key of the section.
		{"bot", "a ConfigHub server", []byte(botHub), func(b []byte) error { _, err := botconfig.ParseConfig("b.yaml", b); return err }, [2]string{"tokenFile:", "token:"}},
		{"repo", "a unit in a ConfigHub Unit", []byte(repoHub), func(b []byte) error { _, err := repoconfig.Parse("backflow.yaml", b); return err }, [2]string{"unit: redis}", "uint: redis}"}},
	} {
		s := schemaOf(t, tc.kind)
		if err := s.Validate(schematest.YAML(t, tc.data)); err != nil {
			t.Errorf("%s schema rejects %s: %v", tc.kind, tc.name, err)
		}
		if err := tc.load(tc.data); err != nil {
			t.Errorf("the loader rejects %s: %v", tc.name, err)
		}
		if !bytes.Contains(tc.data, []byte(tc.typo[0])) {
			t.Fatalf("%s has no %q to misspell", tc.name, tc.typo[0])
		}
		typo := bytes.Replace(tc.data, []byte(tc.typo[0]), []byte(tc.typo[1]), 1)
		if err := s.Validate(schematest.YAML(t, typo)); err == nil {
			t.Errorf("%s schema accepts %s with %q misspelt %q", tc.kind, tc.name, tc.typo[0], tc.typo[1])
		}
		if err := tc.load(typo); err == nil {
			t.Errorf("the loader accepts %s with %q misspelt", tc.name, tc.typo[0])
		}
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
