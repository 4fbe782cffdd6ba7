// Package logging builds legate's one structured logger (logr over
// log/slog) and gives it the warning level logr lacks.
//
// logr has two levels, Info (with verbosity) and Error. An operator also
// needs warnings: a rejected commit or a rollback is not routine, yet
// nothing is broken in legate. Warn writes at slog's warning level when the
// logger is backed by slog (as every logger New makes is) and at Info
// otherwise.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/go-logr/logr"
)

// Levels are the names --log-level accepts, least severe first.
var Levels = []string{"debug", "info", "warn", "error"}

// Formats are the names --log-format accepts.
var Formats = []string{"text", "json"}

// New returns a logger writing to w in format ("text" or "json") that drops
// records below level ("debug", "info", "warn" or "error"). "debug" shows
// the verbose (V(1) to V(4)) messages.
func New(w io.Writer, level, format string) (logr.Logger, error) {
	lv, err := ParseLevel(level)
	if err != nil {
		return logr.Discard(), err
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: debugName}
	var h slog.Handler
	switch format {
	case "text", "":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return logr.Discard(), fmt.Errorf("log format %q: want one of %s", format, strings.Join(Formats, ", "))
	}
	return logr.FromSlogHandler(h), nil
}

// debugName names every verbosity below Info "DEBUG": logr's V(n) is slog
// level -n, which slog would print as "DEBUG+3".
func debugName(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.LevelKey && len(groups) == 0 {
		if lv, ok := a.Value.Any().(slog.Level); ok && lv < slog.LevelInfo {
			return slog.String(slog.LevelKey, "DEBUG")
		}
	}
	return a
}

// ParseLevel turns a --log-level name into a slog level.
func ParseLevel(name string) (slog.Level, error) {
	switch strings.ToLower(name) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("log level %q: want one of %s", name, strings.Join(Levels, ", "))
}

// warnV is the logr verbosity that a slog-backed sink writes at
// slog.LevelWarn: logr's slog sink logs V(n) at slog level -n.
const warnV = -int(slog.LevelWarn)

// Warn logs msg at warning level with the logger's name and values.
func Warn(log logr.Logger, msg string, keysAndValues ...any) {
	sink := log.GetSink()
	if sink == nil {
		return
	}
	if _, ok := sink.(interface{ GetUnderlying() slog.Handler }); !ok {
		// Another backend may read a negative verbosity its own way
		// (zapr as a fatal level): stay at Info there.
		log.Info(msg, keysAndValues...)
		return
	}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1)
	}
	if sink.Enabled(warnV) {
		sink.Info(warnV, msg, keysAndValues...)
	}
}
