package bot

import (
	"context"

	"github.com/backflow-dev/backflow/internal/observe"
)

// Source yields the observations of one cluster. Read never fails as a
// whole: what cannot be read is in the result's Errors and the rest is used.
type Source interface {
	// Name names the source in reports (a path or a URL without secrets).
	Name() string
	// Read returns what the source holds now.
	Read(ctx context.Context) observe.Result
}

// staticSource serves fixed observations: the tests feed the cycle with it.
type staticSource struct {
	// Label names the source in reports.
	Label string
	// Result is returned by every Read.
	Result observe.Result
}

// Name implements Source.
func (s *staticSource) Name() string { return s.Label }

// Read implements Source.
func (s *staticSource) Read(ctx context.Context) observe.Result { return s.Result }
