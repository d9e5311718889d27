package observe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseObservations feeds arbitrary bytes to every observation parser:
// none may panic, every observation must be well formed and believed no
// higher than the ceiling, and a Secret's values must not survive Redact.
func FuzzParseObservations(f *testing.F) {
	dir := filepath.Join("..", "..", "testdata", "cub-scout")
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(goodDoc + "---\n" + strings.Replace(goodDoc, "apps/v1|StatefulSet", "v1|Secret", 1)))
	f.Add([]byte(jsonDoc + "\n" + jsonDoc))
	f.Add([]byte("a: &a [*a, *a]\nb: &b [*a, *a]\n"))
	f.Add([]byte("[" + jsonDoc + "]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, res := range []Result{
			ParseBytes(data, Options{Name: "fuzz", Ceiling: AttributionManagedFields}),
			ParseWatchEvents(strings.NewReader(string(data)), Options{Name: "fuzz", Ceiling: AttributionManagedFields}),
		} {
			for _, o := range res.Observations {
				if _, err := ParseObjectKey(o.Object.String()); err != nil {
					t.Errorf("observation with a bad key: %v", err)
				}
				if o.Change.Attribution.Rank() > AttributionManagedFields.Rank() || !o.Change.Attribution.Valid() {
					t.Errorf("attribution %q above the ceiling", o.Change.Attribution)
				}
				if o.Cluster == "" || o.ObservedAt.IsZero() {
					t.Errorf("observation without cluster or time: %+v", o)
				}
				r := Redact(o)
				for _, fl := range r.Fields {
					if o.Object.IsSecret() && ((!fl.Removed && fl.Live != Redacted) || (fl.HasDesired && fl.Desired != Redacted)) {
						t.Errorf("secret value survived redaction: %+v", fl)
					}
				}
			}
			for _, tr := range res.Triggers {
				if tr.Object.Kind == "" || tr.Object.Name == "" || tr.At.IsZero() {
					t.Errorf("trigger without kind, name or time: %+v", tr)
				}
			}
			for _, err := range res.Errors {
				if !strings.HasPrefix(err.Error(), "fuzz") {
					t.Errorf("error does not name its source: %v", err)
				}
			}
		}
	})
}
