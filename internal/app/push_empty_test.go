package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/server"
)

func TestPushOfNothingIsRefused(t *testing.T) {
	p := NewPushStore(observe.AttributionAsserted, "prod-us-east-1", func([]observe.ObjectKey) []string { return nil })
	for _, body := range []string{"", " \n\t\n"} {
		// why: an empty body (a cub-scout that failed and printed nothing)
		// was accepted as a push of nothing.
		_, err := p.Accept(context.Background(), []byte(body))
		if !errors.Is(err, server.ErrInvalidPush) || !strings.Contains(err.Error(), "observations: empty input") {
			t.Errorf("body %q: %v", body, err)
		}
	}
	// why: an explicit empty list still says there is nothing to report.
	if res, err := p.Accept(context.Background(), []byte("[]")); err != nil || res.Accepted != 0 || len(res.Rejected) != 0 {
		t.Errorf("[]: %+v %v", res, err)
	}
}
