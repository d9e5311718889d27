package receipt

import "github.com/backflow-dev/backflow/internal/policy"

// Checked is one receipt file read and verified against a policy: what
// `backflow verify`, the write-back's receipt check and the demo each need
// of a receipt, decided in one place.
type Checked struct {
	// Path names the receipt file.
	Path string
	// Receipt is the parsed receipt; nil when Err is set.
	Receipt *Receipt
	// Warnings are the keys the model does not know (see Parse).
	Warnings []Violation
	// Violations are what Verify found.
	Violations []Violation
	// Err is set when the file cannot be read or parsed; it wraps
	// ErrUnparseable for a file that is not a receipt at all.
	Err error
}

// Strict is every warning and violation, for a caller that checks
// receipts it wrote itself, where an unknown key is as wrong as a false
// claim.
func (c Checked) Strict() []Violation {
	return append(append([]Violation(nil), c.Warnings...), c.Violations...)
}

// Check parses data, the receipt file at path, and verifies it against pol,
// whose file policyRef names.
func Check(path string, data []byte, pol *policy.Policy, policyRef string) Checked {
	r, warnings, err := Parse(path, data)
	return checked(path, r, warnings, err, pol, policyRef)
}

// CheckFile is Check on the file at path, read as Load reads it.
func CheckFile(path string, pol *policy.Policy, policyRef string) Checked {
	r, warnings, err := Load(path)
	return checked(path, r, warnings, err, pol, policyRef)
}

func checked(path string, r *Receipt, warnings []Violation, err error, pol *policy.Policy, policyRef string) Checked {
	if err != nil {
		return Checked{Path: path, Err: err}
	}
	return Checked{Path: path, Receipt: r, Warnings: warnings, Violations: Verify(r, pol, policyRef)}
}
