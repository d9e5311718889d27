package observe

import "fmt"

// Attribution is how far the identity behind a live change is believed. The
// levels are ordered: unknown < asserted < managed-fields < admission <
// audit-log.
type Attribution string

// The attribution levels, weakest first.
const (
	// AttributionUnknown: nobody says who made the change.
	AttributionUnknown Attribution = "unknown"
	// AttributionAsserted: a document says who, with nothing to back it.
	AttributionAsserted Attribution = "asserted"
	// AttributionManagedFields: the field manager recorded in managedFields.
	AttributionManagedFields Attribution = "managed-fields"
	// AttributionAdmission: an authenticated user from an admission review
	// the API server sent, confirmed by the watch seeing the value it
	// recorded at a newer resourceVersion of the same object.
	AttributionAdmission Attribution = "admission"
	// AttributionAuditLog: an authenticated user from Kubernetes audit events.
	AttributionAuditLog Attribution = "audit-log"
)

// DefaultCeiling is the trust ceiling of a source that does not set one: a
// file, URL or pushed document is believed no higher than asserted.
const DefaultCeiling = AttributionAsserted

// Attributions lists the levels, weakest first.
var Attributions = []Attribution{
	AttributionUnknown,
	AttributionAsserted,
	AttributionManagedFields,
	AttributionAdmission,
	AttributionAuditLog,
}

// Rank orders the levels (unknown is 0); it is -1 for anything else.
func (a Attribution) Rank() int {
	for i, l := range Attributions {
		if a == l {
			return i
		}
	}
	return -1
}

// Valid reports whether a is one of the levels.
func (a Attribution) Valid() bool { return a.Rank() >= 0 }

// ParseAttribution reads one of the level names.
func ParseAttribution(s string) (Attribution, error) {
	a := Attribution(s)
	if !a.Valid() {
		return "", fmt.Errorf("attribution %q: want one of unknown, asserted, managed-fields, admission, audit-log", s)
	}
	return a, nil
}

// Cap lowers a to ceiling when a claims more; an invalid level counts as
// unknown, and an empty ceiling as DefaultCeiling.
func (a Attribution) Cap(ceiling Attribution) Attribution {
	if ceiling == "" {
		ceiling = DefaultCeiling
	}
	if !a.Valid() {
		return AttributionUnknown
	}
	if !ceiling.Valid() {
		return AttributionUnknown
	}
	if a.Rank() > ceiling.Rank() {
		return ceiling
	}
	return a
}
