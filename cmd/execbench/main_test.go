package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

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
	for _, want := range []string{"countersign burn-down: 50 executions", "approval-to-dispatch latency over 3 single approvals",
		"auto-approved intake-to-dispatch latency over 3 single intents"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// The comparison puts countersign beside both peers and counts the rounds
// that meet each target.
func TestComparisonCountsBothPeersTargets(t *testing.T) {
	var out bytes.Buffer
	row := func(river, ledger float64, intake time.Duration) comparison {
		return comparison{
			peer:   peerResult{Mode: "river", JobsPerSec: river, LatencyP50: 2, LatencyP99: 5},
			ledger: peerResult{Mode: "river+ledger", JobsPerSec: ledger, LatencyP50: 3, LatencyP99: 8},
			cs: result{n: 1000, elapsed: time.Second, fromApproval: []time.Duration{3 * time.Millisecond, 4 * time.Millisecond},
				fromIntake: []time.Duration{intake}},
		}
	}
	printComparison(&out, []comparison{row(900, 200, 6*time.Millisecond), row(1100, 300, 4*time.Millisecond)}) // countersign: 1000/s
	for _, want := range []string{
		"| 1 | 900 | 200 | 1000 | **1.11** | **5.00** |",
		"| 2 | 1100 | 300 | 1000 | **0.91** | **3.33** |",
		"≥ 1.0 in 1 of 2 rounds",
		"≥ 4 in 1 of 2 rounds",
		"≤ 1 in 2 of 2 rounds",
		"auto-approved intake→dispatch p99 / River enqueue→work p99: max 1.20, median 1.00; ≤ 1 in 1 of 2 rounds",
		"| 6.00 / 6.00 ms | **1.20** |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("comparison lacks %q:\n%s", want, out.String())
		}
	}
}
