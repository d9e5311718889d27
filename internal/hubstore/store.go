package hubstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/confighub"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// ErrWitness marks a revision whose dry run does not change exactly the
// accepted fields to their live values: nothing is written.
var ErrWitness = errors.New("the dry run does not change exactly the accepted fields")

// ErrMoved marks a revision the dry run would number other than the
// receipt says: nothing is written.
var ErrMoved = errors.New("the revision would not be the one the receipt names")

// Store reads and writes ConfigHub Units through a client.
type Store struct {
	Client *confighub.Client
}

// Reader is plan.ReadOptions.Revisions for ConfigHub Units: each Unit's
// data and head (its data hash and head revision, in ConfigHub's words),
// read through ctx. A Unit that cannot be read, or a reference that is no
// ConfigHub Unit's, is an error naming it (the planner fails its unit's
// decisions closed; the next cycle reads again).
func (s *Store) Reader(ctx context.Context) plan.RevisionReader {
	return func(r repoconfig.StoreRef) ([]byte, plan.Head, error) {
		ref, ch, err := s.resolve(ctx, r)
		if err != nil {
			return nil, plan.Head{}, err
		}
		d, err := s.Client.Read(ctx, ref)
		if err != nil {
			return nil, plan.Head{}, err
		}
		return d.Data.Bytes, Head(ch, d.Data.Hash, d.Unit.HeadRevisionNum), nil
	}
}

// Head is what the planner and the lifecycle say of ch read at data hash
// hash and head revision n: the write of revision n+1 is conditional on
// the hash, and the receipt names that revision.
func Head(ch repoconfig.ConfigHub, hash string, n int64) plan.Head {
	name := ch.Space + "/" + ch.Unit
	return plan.Head{Condition: hash, Number: n, Words: plan.Words{
		Store:     "ConfigHub",
		Document:  "ConfigHub unit " + name,
		Condition: "data hash " + hash,
		Method:    receipt.MethodConfigHubRevision,
		Next:      receipt.ConfigHubRevision(ch.Space, ch.Unit, n+1),
		NotClaimed: fmt.Sprintf("Desired state is the ConfigHub Unit %s at revision %d (data hash %s); "+
			"the field is written as itself in the Unit's document that applies the object, "+
			"the documents themselves are the witness, and the revision is written only when "+
			"the pull request carrying this receipt merges, conditional on that hash, "+
			"after ConfigHub's dry run shows exactly the accepted fields changing; "+
			"that ConfigHub's worker applies the revision is not claimed until a follow-up re-observes the object.",
			name, n, hash),
	}}
}

// resolve is the ConfigHub Unit r names, and its reference; a reference
// to another store, or one no Unit has, is an error naming it.
func (s *Store) resolve(ctx context.Context, r repoconfig.StoreRef) (confighub.Ref, repoconfig.ConfigHub, error) {
	ch, ok := repoconfig.ConfigHubOf(r)
	if !ok {
		return confighub.Ref{}, ch, fmt.Errorf("%s is not a ConfigHub unit (want %s:space/unit)", r,
			repoconfig.StoreConfigHub)
	}
	ref, err := s.Client.Resolve(ctx, ch.Space, ch.Unit)
	return ref, ch, err
}

// Expected is one path the revision must change, as ConfigHub's diff names
// it.
type Expected struct {
	ResourceType, ResourceName, Path string
	// To is the value's text as the diff shows it.
	To string
}

// String is type name path -> to.
func (e Expected) String() string {
	return e.ResourceType + " " + e.ResourceName + " " + e.Path + " -> " + e.To
}

// Expect is what rv's dry run must show changing: each accepted field of
// its object's resource, to its live value.
func Expect(rv *plan.Revision) ([]Expected, error) {
	out := make([]Expected, 0, len(rv.Changes))
	for _, c := range rv.Changes {
		key := c.Object
		segs, err := yamlnode.ParsePath(c.Field)
		if err != nil {
			return nil, fmt.Errorf("field %s of %s: %w", c.Field, c.Object, err)
		}
		path := make([]string, len(segs))
		for i, sg := range segs {
			switch {
			case sg.IsIndex:
				path[i] = fmt.Sprint(sg.Index)
			case sg.Key == "" || strings.ContainsAny(sg.Key, "."):
				// ConfigHub's dot-separated path cannot say this key
				// unambiguously: fail closed rather than guess.
				return nil, fmt.Errorf("field %s of %s has a key ConfigHub's diff path cannot name unambiguously",
					c.Field, c.Object)
			default:
				path[i] = sg.Key
			}
		}
		out = append(out, Expected{
			ResourceType: key.APIVersion + "/" + key.Kind, ResourceName: key.Namespace + "/" + key.Name,
			Path: strings.Join(path, "."), To: scalarText(c.To),
		})
	}
	slices.SortFunc(out, func(a, b Expected) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

// scalarText is a value as ConfigHub's diff shows a scalar: its text.
func scalarText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return values.Format(v)
}

// witness compares the dry run's changes with what must change; it
// returns what differs, or nothing.
func witness(want []Expected, got []confighub.Change) []string {
	seen := map[string]bool{}
	for _, w := range want {
		seen[w.String()] = false
	}
	var bad []string
	for _, c := range got {
		key := Expected{ResourceType: c.ResourceType, ResourceName: c.ResourceName, Path: c.Path, To: c.To}.String()
		if c.Path == "" || (c.Type != "Update" && c.Type != "Add") {
			bad = append(bad, fmt.Sprintf("%s %s %s %s", c.Type, c.ResourceType, c.ResourceName, c.Path))
			continue
		}
		if _, ok := seen[key]; !ok {
			bad = append(bad, "also changes "+key)
			continue
		}
		seen[key] = true
	}
	for _, w := range want {
		if !seen[w.String()] {
			bad = append(bad, "does not change "+w.String())
		}
	}
	return bad
}

// Preview is what a revision would do, for the pull request's body.
type Preview struct {
	// Changes are the dry run's changed paths.
	Changes []confighub.Change
	// Revision is the number the write would make.
	Revision int64
}

// Markdown shows the preview of the Unit named space/unit in a pull
// request body; values of a Secret never reach it, since a Secret is never
// a write-back.
func (p Preview) Markdown(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b,
		"ConfigHub Unit `%s`, revision %d once this pull request merges (ConfigHub's dry run):\n\n",
		mdCode(name), p.Revision)
	b.WriteString("| resource | path | from | to |\n| --- | --- | --- | --- |\n")
	for _, c := range p.Changes {
		fmt.Fprintf(&b, "| `%s %s` | `%s` | `%s` | `%s` |\n", mdCode(c.ResourceType), mdCode(c.ResourceName),
			mdCode(c.Path), mdCode(c.From), mdCode(c.To))
	}
	return b.String()
}

// mdCode makes text safe inside a Markdown code span in a table cell.
func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "|", "\\|", "\n", " ", "\r", " ").Replace(s)
}

// dryRun asks ConfigHub what rv would do and checks it: exactly the
// accepted fields change, to their live values, as the revision the
// receipt names.
func (s *Store) dryRun(ctx context.Context, ref confighub.Ref, rv *plan.Revision, desc string) (Preview, error) {
	want, err := Expect(rv)
	if err != nil {
		return Preview{}, fmt.Errorf("error checking the revision of ConfigHub unit %s: %w: %w", rv.Ref.Name,
			ErrWitness, err)
	}
	dry, err := s.Client.Upload(ctx, ref, rv.Data, confighub.Write{IfMatch: rv.Head.Condition,
		Description: desc, DryRun: true})
	if err != nil {
		return Preview{}, err
	}
	p := Preview{Changes: dry.Changes, Revision: dry.Unit.HeadRevisionNum}
	if bad := witness(want, dry.Changes); len(bad) > 0 {
		return p, fmt.Errorf("error writing ConfigHub unit %s: %w: %s", rv.Ref.Name, ErrWitness,
			strings.Join(bad, "; "))
	}
	if dry.Unit.HeadRevisionNum != rv.Number() {
		return p, fmt.Errorf("error writing ConfigHub unit %s: %w: the dry run makes revision %d, the receipt names %d",
			rv.Ref.Name, ErrMoved, dry.Unit.HeadRevisionNum, rv.Number())
	}
	return p, nil
}

// Preview runs rv's dry run and checks it, writing nothing: what the pull
// request shows, and a witness that fails before anything merges.
func (s *Store) Preview(ctx context.Context, rv *plan.Revision) (Preview, error) {
	ref, _, err := s.resolve(ctx, rv.Ref)
	if err != nil {
		return Preview{}, err
	}
	return s.dryRun(ctx, ref, rv, "")
}

// Written is a revision written.
type Written struct {
	Revision int64
	DataHash string
	// Description is the revision's change description.
	Description string
}

// Write writes rv once the pull request carrying its receipt merged: a dry
// run first, which must change exactly the accepted fields as the revision
// the receipt names, then the upload, conditional on the hash rv was
// planned against. A Unit changed since (confighub.ErrConflict) writes
// nothing: plan again. rcpt and its bytes name the authority in the
// change description.
func (s *Store) Write(ctx context.Context, rv *plan.Revision, rcpt *receipt.Receipt,
	receiptBytes []byte) (Written, error) {
	ref, _, err := s.resolve(ctx, rv.Ref)
	if err != nil {
		return Written{}, err
	}
	desc := Description(rcpt, receiptBytes)
	if _, err := s.dryRun(ctx, ref, rv, desc); err != nil {
		return Written{}, err
	}
	w, err := s.Client.Upload(ctx, ref, rv.Data, confighub.Write{IfMatch: rv.Head.Condition, Description: desc})
	if err != nil {
		return Written{}, err
	}
	if w.Unit.HeadRevisionNum != rv.Number() {
		// The write was conditional on the head, so this is ConfigHub
		// numbering otherwise than it said in the dry run: say so.
		return Written{Revision: w.Unit.HeadRevisionNum, DataHash: w.Unit.DataHash, Description: desc},
			fmt.Errorf("error writing ConfigHub unit %s: %w: wrote revision %d, the receipt names %d",
				rv.Ref.Name, ErrMoved, w.Unit.HeadRevisionNum, rv.Number())
	}
	return Written{Revision: w.Unit.HeadRevisionNum, DataHash: w.Unit.DataHash, Description: desc}, nil
}

// Digest is the receipt's digest: sha256:<hex> of its bytes.
func Digest(receiptBytes []byte) string {
	sum := sha256.Sum256(receiptBytes)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// maxIntent bounds the intent quoted in a change description.
const maxIntent = 200

// Description is a revision's change description: who accepted what,
// why, under which rule, and the receipt's digest.
func Description(r *receipt.Receipt, receiptBytes []byte) string {
	sp := r.Spec
	var fields []string
	for _, cf := range sp.Bounds.ChangedFields {
		fields = append(fields, fmt.Sprintf("%s %s %s -> %s", cf.Object, cf.Field, values.Format(cf.From.V),
			values.Format(cf.To.V)))
	}
	intent := strings.Join(strings.Fields(sp.Trigger.Intent), " ")
	if len(intent) > maxIntent {
		intent = intent[:maxIntent] + "..."
	}
	return fmt.Sprintf("backflow reverse reconcile: %s accepted by %s (role %s), intent %q; "+
		"authority %s %s; receipt %s %s",
		strings.Join(fields, ", "), sp.Trigger.Actor, sp.Trigger.Role, intent,
		sp.Authority.PolicyRef, sp.Authority.MatchedRule, r.Metadata.Name, Digest(receiptBytes))
}
