package botconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/server"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// ServeConfig is backflow serve's config file: the bot config that
// backflow run --once reads, plus a top-level server: section.
type ServeConfig struct {
	// Bot is the bot config.
	Bot *Config
	// Server is the server section, its secrets read.
	Server server.Config
	// Push is the server.observations section (nil when pushes are off).
	Push *server.PushConfig
	// Trust is the trust ceiling of pushed observations.
	Trust observe.Attribution
	// URLTrust is the trust ceiling of observations pushed to the secret URL.
	URLTrust observe.Attribution
	// PrivateKey is the App's key, read once to derive the commit key.
	PrivateKey []byte
}

// ParseServerSection decodes the server section of a serve config file
// strictly, with the decoder of every config file: an unknown key or a value
// of the wrong type is an error naming its dotted path (server.webhook...)
// and line. The other keys are the bot config's and are not checked here.
// file names the input in messages.
func ParseServerSection(file string, data []byte) (*server.FileConfig, error) {
	var top map[string]yaml.Node
	if _, err := yamlnode.DecodeFile(data, &top, yamlnode.Options{MaxNodes: maxConfigNodes}); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	sn, ok := top["server"]
	if !ok || yamlnode.IsNull(&sn) {
		return nil, fmt.Errorf("%s: server: required (listen address, schedule, webhook secret)", file)
	}
	var fc server.FileConfig
	if errs := yamlnode.Decode(&sn, &fc, yamlnode.Options{MaxNodes: maxConfigNodes}); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			e.Path = strings.TrimSuffix("server."+e.Path, ".")
			msgs[i] = e.FileMessage()
		}
		return nil, fmt.Errorf("%s: %s", file, strings.Join(msgs, "; "))
	}
	return &fc, nil
}

// LoadServeConfig reads and checks the config file at path and the secrets
// it names. The bot config is the bot's to read (it keeps the server
// section as it is); the server section is decoded strictly here, from the
// same file so that errors carry its line numbers. Errors name the file and
// the key, never a secret.
func LoadServeConfig(path string) (*ServeConfig, error) {
	bc, err := LoadConfig(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	name := filepath.Base(path)
	fc, err := ParseServerSection(name, data)
	if err != nil {
		return nil, err
	}
	// Secret files, like the bot's paths, are relative to the config's folder.
	dir := filepath.Dir(path)
	readFile := func(p string) ([]byte, error) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return os.ReadFile(p)
	}
	sc, err := fc.Resolve(readFile, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out := &ServeConfig{Bot: bc, Server: sc, Push: fc.Observations,
		Trust: observe.DefaultCeiling, URLTrust: observe.AttributionAsserted}
	if p := out.Push; p != nil && p.Trust != "" {
		if out.Trust, err = observe.ParseAttribution(p.Trust); err != nil {
			return nil, fmt.Errorf("%s: server.observations.trust: %w", name, err)
		}
	}
	if p := out.Push; p != nil && p.URLTrust != "" {
		if out.URLTrust, err = observe.ParseAttribution(p.URLTrust); err != nil {
			return nil, fmt.Errorf("%s: server.observations.urlTrust: %w", name, err)
		}
	}
	if out.PrivateKey, err = bc.PrivateKey(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}
