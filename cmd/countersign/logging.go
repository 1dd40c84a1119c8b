package main

import (
	"io"
	"log/slog"
	"os"

	"github.com/countersign/countersign/internal/requestid"
)

// newLogger returns serve's logger: lines for people when stderr is a
// terminal, JSON for machines otherwise. COUNTERSIGN_LOG_FORMAT (text or
// json) overrides; Validate has checked it.
func newLogger(format string, stderr io.Writer) *slog.Logger {
	if format == "" {
		format = "json"
		if isTerminal(stderr) {
			format = "text"
		}
	}
	// A line logged for an agent API request names it (http_request_id).
	if format == "text" {
		return slog.New(requestid.Handler(slog.NewTextHandler(stderr, nil)))
	}
	return slog.New(requestid.Handler(slog.NewJSONHandler(stderr, nil)))
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
