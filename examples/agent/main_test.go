package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/servetest"
)

func TestMain(m *testing.M) { servetest.Main(m) }

// Against a local run the example needs no environment beyond where serve
// is: it finds the local agent's token in serve's data directory, lists the
// tools and asks for the write, then waits for a decision nobody makes here.
func TestTheExampleFindsTheLocalRunsToken(t *testing.T) {
	data := t.TempDir()
	serve := servetest.Start(t, "COUNTERSIGN_DATA_DIR="+data, "COUNTERSIGN_CONFIG=", "COUNTERSIGN_DATABASE_URL=")
	t.Setenv("COUNTERSIGN_URL", serve.URL)
	t.Setenv("COUNTERSIGN_DATA_DIR", data)
	t.Setenv("COUNTERSIGN_TOKEN", "")

	err := agent("demo.refund", "example-test-run", 2*time.Second)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("agent = %v, want it to wait for the decision until its deadline", err)
	}
	t.Setenv("COUNTERSIGN_DATA_DIR", t.TempDir())
	if err := agent("demo.refund", "example-test-run", time.Second); err == nil || err.Error()[:9] != "no token:" {
		t.Errorf("with no token anywhere: %v, want the sentence that says what to set", err)
	}
}
