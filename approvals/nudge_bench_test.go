package approvals

import (
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// BenchmarkNudgeSweep measures one reminder sweep on PostgreSQL over
// pending requests whose cards are posted: idle (none due yet) and due
// (every request queued a reminder, with its audit event; the sweep then
// finds nothing more). -short seeds fewer requests.
func BenchmarkNudgeSweep(b *testing.B) {
	pending := 2000
	if testing.Short() {
		pending = 50
	}
	bundle := setup(b)
	bundle.svc.Batcher = nil
	tool := bundle.svc.Tools["billing.credit"]
	tool.RemindAfter = 30 * time.Minute
	bundle.svc.Tools["billing.credit"] = tool
	for i := range pending {
		run := fmt.Sprintf("sweep-%d", i)
		req, _, err := bundle.svc.Submit(bundle.ctx, "billing-agent", newIntent(&intentOpts{RunID: &run}))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bundle.store.RecordCard(bundle.ctx, store.Card{RequestID: req.ID, Round: 1, Surface: "slack", Ref: "C1/" + run}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run(fmt.Sprintf("idle/pending=%d", pending), func(b *testing.B) {
		for b.Loop() {
			if n, err := bundle.svc.NudgeOnce(bundle.ctx); err != nil || n != 0 {
				b.Fatalf("NudgeOnce = %d, %v", n, err)
			}
		}
	})
	b.Run(fmt.Sprintf("due/pending=%d", pending), func(b *testing.B) {
		// A run before this one (-count) queued them: start afresh.
		if err := bundle.exec(`DELETE FROM outbox WHERE data ? 'nudge'`); err != nil {
			b.Fatal(err)
		}
		bundle.svc.Now = func() time.Time { return time.Now().Add(45 * time.Minute) }
		defer func() { bundle.svc.Now = nil }()
		queued := 0
		for b.Loop() {
			n, err := bundle.svc.NudgeOnce(bundle.ctx)
			if err != nil {
				b.Fatal(err)
			}
			queued += n
		}
		if queued != pending {
			b.Fatalf("queued %d reminders, want %d", queued, pending)
		}
	})
}
