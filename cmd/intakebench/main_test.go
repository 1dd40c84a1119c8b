package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/store/storetest"
)

// TestSmoke runs the benchmark at a tiny size (it builds and starts a real
// countersign serve), so a change that breaks the hook's request shape, its
// configuration or the schema fails the test run instead of the next person
// who benchmarks.
func TestSmoke(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{
		"-database-url", storetest.AdminURL(), "-duration", "200ms", "-rounds", "1", "-clients", "2",
	}, &out)
	if err != nil {
		t.Fatalf("intakebench: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "\n| 2 | ") {
		t.Errorf("output lacks the row for 2 clients:\n%s", out.String())
	}
}
