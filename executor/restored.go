package executor

import (
	"context"
	"log/slog"

	"github.com/countersign/countersign/store"
)

// verifyFirst runs before the first send of an execution a restore may have
// hidden a send of (store.Execution.VerifyFirst): the copy the ledger was
// restored from can miss a write the provider performed after the backup,
// so the provider is asked before anything is sent. send is true when the
// send may go ahead: the provider does not have the write (its verifier says so)
// or deduplicates on the key (a key-aware tool without a verify URL). When
// send is false, t is the outcome to record, or, with recorded true, there
// is nothing to record (Stop's grace ended during the check; nothing was
// sent and the claim expires to the reconciler).
func (e *Executor) verifyFirst(ctx context.Context, tool Tool, c store.Claim, base store.Transition, log *slog.Logger) (t store.Transition, send, recorded bool) {
	switch {
	case tool.Verifier != nil:
		v, err := verifyWith(ctx, tool, c.Execution)
		switch {
		case err == nil && v.Found:
			t = base
			t.To = store.ExecSucceeded
			t.Status, t.Body, t.ProviderRef = v.Status, v.Body, v.ProviderRef
			t.EventData = map[string]any{"attempt": c.Attempts, "verified": true, "restored": true, "status": v.Status, "provider_ref": v.ProviderRef}
			log.Info("verified before sending after a restore: the provider has the write; nothing was sent")
			return t, false, false
		case err == nil:
			log.Info("verified before sending after a restore: the provider does not have the write")
			return base, true, false
		}
		if ctx.Err() != nil {
			return base, false, true
		}
		reason := err.Error()
		msg := "the ledger was restored from a copy and this write may have been sent before it; " + reason + "; nothing was sent"
		if c.Attempts >= c.MaxAttempts {
			return escalate(base, CodeUnverifiable, msg), false, false
		}
		t = base
		delay := e.backoff(c.Attempts)
		t.To, t.Delay = store.ExecReady, delay
		t.Code, t.Error = CodeUnverifiable, msg
		t.EventData = map[string]any{"attempt": c.Attempts, "restored": true, "code": CodeUnverifiable, "retry_in_ms": delay.Milliseconds()}
		log.Warn("could not verify before sending after a restore; will ask again", slog.String("reason", reason))
		return t, false, false
	case tool.KeyAware:
		// A resend under the same key returns the provider's stored answer
		// if it has the write.
		return base, true, false
	}
	log.Warn("a restore may have hidden a send of this write, and the provider can neither be asked nor deduplicates; a human decides")
	return escalate(base, CodeUnverifiable, "the ledger was restored from a copy and this write may have been sent before it; the provider has no verify URL and does not honour keys, so only a human can say whether it happened; nothing was sent"), false, false
}
