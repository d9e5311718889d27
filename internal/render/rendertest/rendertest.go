// Package rendertest is the TestMain of test packages that render charts:
// the render witness renders in a child process, the binary itself started
// again, so a test binary must serve renderings as cmd/backflow-core's main
// does. It must not be imported outside tests.
package rendertest

import (
	"os"
	"testing"

	"github.com/backflow-dev/backflow/internal/render"
)

// Main serves renderings when the test binary was started as a render
// child, and runs the tests otherwise.
func Main(m *testing.M) {
	render.ChildMain()
	os.Exit(m.Run())
}
