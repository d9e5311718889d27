package cli

import (
	"log/slog"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/backflow-dev/backflow/internal/cliroot"
)

// commandLogger is the logger a command writes to stderr with: the
// --log-level and --log-format flags when given, else the command's own
// defaults. In the process's command, client-go's klog is sent to the same
// handler, so a Kubernetes client's messages come out in the same format
// and under the same level.
func commandLogger(cmd *cobra.Command, defLevel slog.Level, defFormat string) *slog.Logger {
	lvl, _ := cmd.Flags().GetString(cliroot.FlagLogLevel)
	level, _ := cliroot.ParseLevel(lvl, defLevel) // checked before the command ran
	format, _ := cmd.Flags().GetString(cliroot.FlagLogFormat)
	if format == "" {
		format = defFormat
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(cmd.ErrOrStderr(), opts)
	if format == "json" {
		h = slog.NewJSONHandler(cmd.ErrOrStderr(), opts)
	}
	logger := slog.New(h)
	if cmd.Root().Annotations[annotationProcess] != "" {
		klog.SetSlogLogger(logger)
	}
	return logger
}

// annotationProcess marks the root command of the process (set by main):
// only it bridges klog, which is one per process, so commands run in-process
// by tests never redirect each other's Kubernetes client logs.
const annotationProcess = "backflow.dev/process"
