package bot

import (
	"time"

	"github.com/backflow-dev/backflow/internal/plan"
)

// ExpiryReport is one temporary acceptance (break glass) as reported.
type ExpiryReport struct {
	// Receipt is the accepting receipt's path on the default branch.
	Receipt     string `json:"receipt"`
	Environment string `json:"environment"`
	Unit        string `json:"unit"`
	Object      string `json:"object"`
	// ExpiresAt is an RFC 3339 time, empty when the receipt's is not one.
	ExpiresAt string `json:"expiresAt,omitempty"`
	// State is in-force, due, waiting, void or refused; WriteBack the
	// restoring write-back's branch when one is proposed.
	State     string `json:"state"`
	WriteBack string `json:"writeBack,omitempty"`
	Why       string `json:"why"`
}

func expiryReports(xs []plan.Expiry) []ExpiryReport {
	var out []ExpiryReport
	for _, x := range xs {
		r := ExpiryReport{Receipt: x.Receipt, Environment: x.Environment, Unit: x.Unit, Object: x.Object, State: string(x.State),
			WriteBack: x.WriteBack, Why: x.Why}
		if !x.ExpiresAt.IsZero() {
			r.ExpiresAt = x.ExpiresAt.UTC().Format(time.RFC3339)
		}
		out = append(out, r)
	}
	return out
}
