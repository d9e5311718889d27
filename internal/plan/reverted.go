package plan

import (
	"fmt"
	"time"

	"github.com/backflow-dev/backflow/internal/values"
)

// revertedReasons says of each changed field that the GitOps controller
// wrote the person's value over before the object was read (the watch kept
// the person's transition) that the live object was reverted: what is
// proposed is the person's value, not what is live now, and merging it is
// what brings it back.
func revertedReasons(fields []*fieldState, show func(any) any) []string {
	var out []string
	for _, fs := range fields {
		r := fs.f.Reverted
		if r == nil {
			continue
		}
		out = append(out, fmt.Sprintf("reverted live: %s was set to %s by %s at resourceVersion %s (seen by the watch "+
			"at %s), and %s wrote it back to %s before this cycle read the object (resourceVersion %s): the person's "+
			"value is proposed, and merging it is what brings it back live",
			fs.f.Path, values.Format(show(fs.f.Live)), orNone(fs.f.Manager), r.ChangedVersion,
			r.ChangedAt.UTC().Format(time.RFC3339), orNone(r.Manager), values.Format(show(r.Live)), r.Version))
	}
	return out
}

// revertedEvidence is the receipt's line for each reverted field: the
// observation it rests on was made after the revert, from the transition
// the watch kept.
func revertedEvidence(fields []*fieldState, show func(any) any) []string {
	var out []string
	for _, fs := range fields {
		if r := fs.f.Reverted; r != nil {
			out = append(out, fmt.Sprintf("%s: the person's value %s from the watch's transition to resourceVersion %s; live "+
				"was written back to %s by %s at resourceVersion %s before it was read", fs.f.Path, values.Format(show(fs.f.Live)),
				r.ChangedVersion, values.Format(show(r.Live)), orNone(r.Manager), r.Version))
		}
	}
	return out
}
