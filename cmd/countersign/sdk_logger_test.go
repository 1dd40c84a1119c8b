package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// The SDK's logger keeps warnings and errors, with their attributes and
// groups, and drops what it writes at info and debug.
func TestQuietSDKKeepsWarningsOnly(t *testing.T) {
	var out bytes.Buffer
	l := quietSDK(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})).With("component", "mcp"))
	l.Info("server session connected")
	l.Debug("frame")
	l.With("session_id", "s1").Info("server session disconnected")
	l.WithGroup("g").Warn("write failed", "n", 1)
	l.Error("broken")
	got := out.String()
	if strings.Contains(got, "session") || strings.Contains(got, "frame") {
		t.Errorf("info or debug lines passed:\n%s", got)
	}
	for _, want := range []string{"msg=\"write failed\" component=mcp g.n=1", "msg=broken component=mcp"} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
}
