package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/countersign/countersign/bench/peers/internal/pgtest"
)

// TestSmoke burns down a few jobs and times a few singles, so a River
// upgrade that breaks the baseline fails the test run.
func TestSmoke(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-database-url", pgtest.NewURL(t), "-jobs", "50", "-trickle", "3", "-json"}, &out)
	if err != nil {
		t.Fatalf("riverexec: %v\n%s", err, out.String())
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("decoding %q: %v", out.String(), err)
	}
	if res.Jobs != 50 || res.Failed != 0 || res.Singles != 3 || res.JobsPerSec <= 0 {
		t.Errorf("result = %+v, want 50 jobs, none failed, 3 singles", res)
	}
}
