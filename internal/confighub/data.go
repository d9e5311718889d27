package confighub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/backflow-dev/backflow/internal/yamlnode"
	yaml "go.yaml.in/yaml/v3"
)

// Hash is the DataHash of data: its SHA-256, hex-encoded.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Desired is a Unit as backflow plans against it: the Unit at its head
// revision and its data, read together.
type Desired struct {
	Unit Unit
	Data Data
}

// Read reads the Unit and its data and checks that backflow can write it
// back: toolchain Kubernetes/YAML, data within MaxDataSize that parses as
// a stream of manifests, and the data's hash the Unit's DataHash (a write
// between the two reads is a conflict: read again).
func (c *Client) Read(ctx context.Context, r Ref) (Desired, error) {
	u, err := c.GetUnit(ctx, r)
	if err != nil {
		return Desired{}, err
	}
	k := call{op: "reading", space: r.SpaceSlug, unit: r.UnitSlug}
	if u.Toolchain != ToolchainKubernetesYAML {
		return Desired{}, c.fail(k, 0, ErrToolchain, fmt.Sprintf("its toolchain is %q", u.Toolchain), nil)
	}
	if u.DataSize > c.maxData {
		msg := fmt.Sprintf("%d bytes, over the %d bytes backflow reads", u.DataSize, c.maxData)
		return Desired{}, c.fail(k, 0, ErrTooLarge, msg, nil)
	}
	d, err := c.Download(ctx, r)
	if err != nil {
		return Desired{}, err
	}
	if d.Hash != u.DataHash {
		msg := fmt.Sprintf("the data changed between reading the unit (%s) and its data (%s)", u.DataHash, d.Hash)
		return Desired{}, c.fail(k, 0, ErrConflict, msg, nil)
	}
	if err := CheckManifests(d.Bytes); err != nil {
		return Desired{}, c.fail(k, 0, ErrUnparseable, err.Error(), nil)
	}
	return Desired{Unit: u, Data: d}, nil
}

// CheckManifests says why data is not a stream of Kubernetes manifests:
// every document that holds anything must parse as a mapping naming its
// apiVersion, kind and metadata.name.
func CheckManifests(data []byte) error {
	for i, doc := range yamlnode.SplitDocuments(data) {
		if doc.Empty {
			continue
		}
		var v any
		if err := yaml.Unmarshal(data[doc.Start:doc.End], &v); err != nil {
			return fmt.Errorf("document %d (line %d): %w", i, doc.Line, err)
		}
		if v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("document %d (line %d) is not a mapping", i, doc.Line)
		}
		md, _ := m["metadata"].(map[string]any)
		for _, f := range []struct {
			name string
			v    any
		}{{"apiVersion", m["apiVersion"]}, {"kind", m["kind"]}, {"metadata.name", md["name"]}} {
			if s, ok := f.v.(string); !ok || s == "" {
				return fmt.Errorf("document %d (line %d) has no %s", i, doc.Line, f.name)
			}
		}
	}
	return nil
}
