package main

import (
	"context"
	"log/slog"
)

// quietSDK is the logger /mcp gives the MCP SDK: its warnings and errors,
// without the lines it writes at info for every session. A stateless
// server opens and closes a session for each POST, so those were four
// lines for every tool call (connecting, connected, initialized,
// disconnected) and about a twentieth of a gateway read's CPU; a call's own
// line ("read passed through") is countersign's and stays.
func quietSDK(l *slog.Logger) *slog.Logger {
	return slog.New(minLevel{Handler: l.Handler(), min: slog.LevelWarn})
}

// minLevel passes on the records of its handler at min and above.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.min && h.Handler.Enabled(ctx, level)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
