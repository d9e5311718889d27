package cli

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// --log-format and --log-level shape the command's logger, and in the
// process's command client-go's klog writes through the same handler.
func TestLogFlagsAndKlogBridge(t *testing.T) {
	root := newRootCmd()
	root.Annotations = map[string]string{annotationProcess: "true"}
	var errb bytes.Buffer
	root.SetErr(&errb)
	c, _, err := root.Find([]string{"version"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ParseFlags([]string{"--log-format", "json", "--log-level", "info"}); err != nil {
		t.Fatal(err)
	}
	logger := commandLogger(c, slog.LevelWarn, "text")
	t.Cleanup(klog.ClearLogger)
	logger.Debug("below the level")
	logger.Info("from slog")
	klog.Info("from klog") // as client-go's reflector logs
	klog.V(4).Info("a verbose klog line stays below the level")
	klog.Flush()
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want the records of slog and of klog as JSON lines, got %q", errb.String())
	}
	for i, want := range []string{"from slog", "from klog"} {
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil || rec["msg"] != want || rec["level"] != "INFO" {
			t.Errorf("line %d: %q (%v), want a JSON INFO record %q", i, lines[i], err, want)
		}
	}
}

// Without the process mark (commands run in-process by tests), klog is
// left alone, and the command's defaults apply.
func TestCommandLoggerDefaults(t *testing.T) {
	root := newRootCmd()
	var errb bytes.Buffer
	root.SetErr(&errb)
	c, _, _ := root.Find([]string{"version"})
	if err := c.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	logger := commandLogger(c, slog.LevelWarn, "text")
	logger.Info("hidden")
	logger.Warn("shown")
	if out := errb.String(); strings.Contains(out, "hidden") || !strings.Contains(out, "level=WARN msg=shown") {
		t.Errorf("default text logger at warn wrote %q", out)
	}
}
