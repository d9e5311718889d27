package botconfig

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
)

// PrivateKey reads the App's key from the file or the environment variable
// the config names. The error names where, never what.
func (c *Config) PrivateKey() ([]byte, error) {
	if c.GitHub.PrivateKeyFile != "" {
		b, err := os.ReadFile(c.GitHub.PrivateKeyFile)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("github.privateKeyFile: reading %s: %w", c.GitHub.PrivateKeyFile, err)
		}
		return b, nil
	}
	v := os.Getenv(c.GitHub.PrivateKeyEnv)
	if v == "" {
		return nil, fmt.Errorf("github.privateKeyEnv: environment variable %s is empty or unset", c.GitHub.PrivateKeyEnv)
	}
	return []byte(v), nil
}

// CommitKey derives the key of the token that lets the bot recognise its own
// commits after a crash from the App's private key, which only the bot
// holds. Every process acting as the App derives the same key, so one
// recognises another's commits; the key never leaves the process.
func CommitKey(privateKey []byte) []byte {
	mac := hmac.New(sha256.New, privateKey)
	mac.Write([]byte("backflow commit key v1"))
	return mac.Sum(nil)
}

// Secret reads a secret named by a file (relative to the config's
// folder; one trailing newline ignored) or an environment variable. Neither
// named is no secret. Errors name the key and where, never the value.
func (c *Config) Secret(key, file, env string) ([]byte, error) {
	switch {
	case file != "":
		b, err := os.ReadFile(c.Resolve(file))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
		if len(b) == 0 {
			return nil, fmt.Errorf("%s: %s is empty", key, file)
		}
		return b, nil
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok || v == "" {
			return nil, fmt.Errorf("%s: environment variable %s is empty or unset", key, env)
		}
		return []byte(v), nil
	}
	return nil, nil
}
