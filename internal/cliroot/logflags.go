package cliroot

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
)

// The persistent logging flags of every command.
const (
	FlagLogLevel  = "log-level"
	FlagLogFormat = "log-format"
)

func addLogFlags(root *cobra.Command) {
	pf := root.PersistentFlags()
	pf.String(
		FlagLogLevel,
		"",
		"log level: debug, info, warn or error (default: the command's, info for serve and localhub, warn for run)",
	)
	pf.String(FlagLogFormat, "", "log format on stderr: json or text (default: json for serve, text otherwise)")
}

// checkLogFlags refuses a level or format the logger cannot honour, before
// the command runs.
func checkLogFlags(cmd *cobra.Command) error {
	lvl, _ := cmd.Flags().GetString(FlagLogLevel)
	if _, err := ParseLevel(lvl, slog.LevelInfo); err != nil {
		return UsageError("%s: --%s: %v", CommandName(cmd), FlagLogLevel, err)
	}
	switch f, _ := cmd.Flags().GetString(FlagLogFormat); f {
	case "", "json", "text":
	default:
		return UsageError("%s: --%s %q: want json or text", CommandName(cmd), FlagLogFormat, f)
	}
	return nil
}

// ParseLevel reads a --log-level value; "" is def.
func ParseLevel(s string, def slog.Level) (slog.Level, error) {
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
