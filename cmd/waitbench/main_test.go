package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/store/storetest"
)

// TestSmoke runs the benchmark at a tiny size (it builds and starts a real
// countersign serve), so a change that breaks long-polls, the metrics it
// reads or the seeding fails the test run instead of the next person who
// benchmarks. Its waiters must be answered only by their changes.
func TestSmoke(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{
		"-database-url", storetest.AdminURL(), "-waiters", "20", "-changes", "5", "-idle", "1s",
	}, &out)
	if err != nil {
		t.Fatalf("waitbench: %v\n%s", err, out.String())
	}
	for _, want := range []string{"| serve RSS |", "waiters answered while nothing changed: 0", "wake-up of 5 cancelled requests' waiters"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
