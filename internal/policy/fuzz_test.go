package policy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParsePolicy checks that parsing never panics, that every failure is
// either unparseable or a validation error, and that a policy that failed
// validation never allows anything, even a request built from its own rules.
func FuzzParsePolicy(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yaml")
	seeds = append(seeds, seedPolicy)
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(minimal))
	f.Add([]byte(minimal + "          minimum: 5\n          maximum: 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		var verr *ValidationError
		switch {
		case err == nil:
			if !p.Valid() {
				t.Fatal("no error but the policy is invalid")
			}
		case errors.Is(err, ErrUnparseable):
			if p != nil {
				t.Fatal("an unparseable policy came back")
			}
			return
		case errors.As(err, &verr):
			if p.Valid() || len(verr.Errors) == 0 {
				t.Fatal("a validation error left the policy valid or listed nothing")
			}
		default:
			t.Fatalf("unexpected error type %T: %v", err, err)
		}
		for _, req := range requestsFrom(p) {
			d := p.Evaluate(req)
			if err != nil && d.Allowed {
				t.Fatalf("a policy that failed validation allowed %+v", req)
			}
			if d.Allowed == (len(d.Reasons) > 0) || d.Allowed != (d.Match != nil) {
				t.Fatalf("inconsistent decision %+v", d)
			}
		}
	})
}

// requestsFrom builds requests that the policy's own entries would match,
// so that the fuzzer reaches the allow path.
func requestsFrom(p *Policy) []Request {
	var out []Request
	for _, r := range p.Rules {
		for _, a := range r.MayAccept {
			req := Request{Roles: []string{r.Role}, Field: a.Field, ValuePath: a.ValuePath, Value: 3, HasValue: true}
			if len(a.Objects) > 0 {
				req.Object = a.Objects[0]
			}
			if len(a.Environments) > 0 {
				req.Environment = a.Environments[0]
			}
			out = append(out, req)
			if len(a.OneOf) > 0 {
				req.Value = a.OneOf[0]
				out = append(out, req)
			}
		}
	}
	return out
}
