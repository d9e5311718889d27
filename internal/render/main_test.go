package render

import (
	"os"
	"testing"
)

// TestMain serves renderings when the test binary is started as a render
// child, as the backflow binary's main does.
func TestMain(m *testing.M) {
	ChildMain()
	os.Exit(m.Run())
}
