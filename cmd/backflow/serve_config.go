package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/server"
)

// serveConfig is backflow serve's config file: the bot config that
// backflow run --once reads, plus a top-level server: section.
type serveConfig struct {
	bot    *bot.Config
	server server.Config
	// push is the server.observations section (nil when pushes are off).
	push *server.PushConfig
	// trust is the trust ceiling of pushed observations.
	trust observe.Attribution
	// privateKey is the App's key, read once to derive the commit key.
	privateKey []byte
}

// serveFile splits the file: the server section is decoded strictly here,
// every other key is the bot config's.
type serveFile struct {
	Server *server.FileConfig   `yaml:"server"`
	Rest   map[string]yaml.Node `yaml:",inline"`
}

// loadServeConfig reads and checks the config file at path and the secrets
// it names. The bot config is the bot's to read (it keeps the server
// section as it is); the server section is decoded strictly here, from the
// same file so that errors carry its line numbers. Errors name the file and
// the key, never a secret.
func loadServeConfig(path string) (*serveConfig, error) {
	bc, err := bot.LoadConfig(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	name := filepath.Base(path)
	var sf serveFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&sf); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if sf.Server == nil {
		return nil, fmt.Errorf("%s: server: required (listen address, schedule, webhook secret)", name)
	}
	// Secret files, like the bot's paths, are relative to the config's folder.
	dir := filepath.Dir(path)
	readFile := func(p string) ([]byte, error) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return os.ReadFile(p)
	}
	sc, err := sf.Server.Resolve(readFile, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out := &serveConfig{bot: bc, server: sc, push: sf.Server.Observations, trust: observe.DefaultCeiling}
	if p := out.push; p != nil && p.Trust != "" {
		if out.trust, err = observe.ParseAttribution(p.Trust); err != nil {
			return nil, fmt.Errorf("%s: server.observations.trust: %w", name, err)
		}
	}
	if out.privateKey, err = bc.PrivateKey(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}
