package bot

import (
	"testing"

	"github.com/backflow-dev/backflow/internal/render/rendertest"
)

// TestMain serves renderings when the test binary is a render child.
func TestMain(m *testing.M) { rendertest.Main(m) }
