package cli

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// The persistent logging flags of every command.
const (
	flagLogLevel  = "log-level"
	flagLogFormat = "log-format"
)

func addLogFlags(root *cobra.Command) {
	pf := root.PersistentFlags()
	pf.String(flagLogLevel, "", "log level: debug, info, warn or error (default: the command's, info for serve and localhub, warn for run)")
	pf.String(flagLogFormat, "", "log format on stderr: json or text (default: json for serve, text otherwise)")
}

// checkLogFlags refuses a level or format the logger cannot honour, before
// the command runs.
func checkLogFlags(cmd *cobra.Command) error {
	lvl, _ := cmd.Flags().GetString(flagLogLevel)
	if _, err := parseLevel(lvl, slog.LevelInfo); err != nil {
		return usageError("%s: --%s: %v", commandName(cmd), flagLogLevel, err)
	}
	switch f, _ := cmd.Flags().GetString(flagLogFormat); f {
	case "", "json", "text":
	default:
		return usageError("%s: --%s %q: want json or text", commandName(cmd), flagLogFormat, f)
	}
	return nil
}

func parseLevel(s string, def slog.Level) (slog.Level, error) {
	if s == "" {
		return def, nil
	}
	var l slog.Level
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		if err := l.UnmarshalText([]byte(s)); err != nil {
			return def, err
		}
		return l, nil
	}
	return def, fmt.Errorf("%q: want debug, info, warn or error", s)
}

// commandLogger is the logger a command writes to stderr with: the
// --log-level and --log-format flags when given, else the command's own
// defaults. In the process's command, client-go's klog is sent to the same
// handler, so a Kubernetes client's messages come out in the same format
// and under the same level.
func commandLogger(cmd *cobra.Command, defLevel slog.Level, defFormat string) *slog.Logger {
	lvl, _ := cmd.Flags().GetString(flagLogLevel)
	level, _ := parseLevel(lvl, defLevel) // checked before the command ran
	format, _ := cmd.Flags().GetString(flagLogFormat)
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
