package bot

import (
	"os"
	"testing"

	"github.com/backflow-dev/backflow/internal/render"
)

// TestMain serves renderings when the test binary is started as a render
// child: the render witness renders in a child process, the binary itself.
func TestMain(m *testing.M) {
	render.ChildMain()
	os.Exit(m.Run())
}
