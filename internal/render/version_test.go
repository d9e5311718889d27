package render

import (
	"os"
	"strings"
	"testing"
)

func TestHelmVersionIsGoMods(t *testing.T) {
	// why: receipts name the renderer's version; it must be the one built in.
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\t"+helmModule+" "+HelmVersion+"\n") {
		t.Errorf("go.mod does not require %s %s", helmModule, HelmVersion)
	}
}
