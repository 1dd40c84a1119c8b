package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/store/storetest"
)

// TestSmoke runs the benchmark at a tiny size, so a schema change that breaks
// its seeding or its measurements fails the test run instead of the next
// person who benchmarks.
func TestSmoke(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{
		"-database-url", storetest.AdminURL(), "-executions", "50", "-trickle", "3", "-batch", "20",
	}, &out)
	if err != nil {
		t.Fatalf("execbench: %v\n%s", err, out.String())
	}
	for _, want := range []string{"countersign burn-down: 50 executions", "approval-to-dispatch latency over 3 single approvals"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
