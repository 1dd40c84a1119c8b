package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store"
)

// An approved write whose tool was then removed from the configuration
// waits for nothing: serve names it at start and in /metrics.
func TestReadyRowsOfAToolNoLongerConfiguredAreReported(t *testing.T) {
	t.Parallel()
	first := testApp(t, &config.Config{}, nil) // billing.credit, not started: nothing dispatches
	ctx := context.Background()
	// A service without the app's intake batcher, which runs only once started.
	review, err := approvals.New(approvals.Config{DB: first.db, Tools: first.cfg.ReviewTools(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	req, _, err := review.Submit(ctx, "smoke-agent", approvals.Intent{RunID: "r", Step: json.RawMessage("1"),
		Tool: "billing.credit", Effect: json.RawMessage(`{"invoice":"inv_1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := review.Decide(ctx, approvals.Decision{RequestID: req.ID, Round: 1, PayloadHash: req.PayloadHash,
		Verdict: store.VerdictApprove, DecidedBy: "UANA", Via: "test"}); err != nil {
		t.Fatal(err)
	}

	// The same database, now configured with another tool only.
	cfg := *first.cfg
	cfg.File.Tools = map[string]config.ToolConfig{"billing.refund": cfg.File.Tools["billing.credit"]}
	var logs bytes.Buffer
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	second, err := newApp(ctx, &cfg, slog.New(slog.NewJSONHandler(&logs, nil)), ln)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { second.db.Close(); second.stop(time.Now()) }()
	if !strings.Contains(logs.String(), "approved writes wait for a tool that is no longer configured") ||
		!strings.Contains(logs.String(), `"tool":"billing.credit","executions":1`) {
		t.Errorf("no start warning naming billing.credit:\n%s", logs.String())
	}
	want := `
# HELP countersign_ready_unconfigured_tool Approved executions waiting to be sent whose tool is no longer configured, so nothing will send them, by tool.
# TYPE countersign_ready_unconfigured_tool gauge
countersign_ready_unconfigured_tool{tool="billing.credit"} 1
`
	if err := testutil.GatherAndCompare(second.registry, strings.NewReader(want), "countersign_ready_unconfigured_tool"); err != nil {
		t.Error(err)
	}
	// Where every tool is configured, nothing is reported.
	if err := testutil.GatherAndCompare(first.registry, strings.NewReader(""), "countersign_ready_unconfigured_tool"); err != nil {
		t.Error(err)
	}
}
