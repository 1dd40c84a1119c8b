package executor

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/countersign/countersign/internal/mutant"
	"github.com/countersign/countersign/store"
)

// maxInlineSettle is the longest settle time verify waits out in place;
// a longer one leaves the row to a later lease.
const maxInlineSettle = 2 * time.Second

// verify decides what an unknown execution becomes. ok is false when it
// stays unknown until the next lease (the provider could not say yet).
func (e *Executor) verify(ctx context.Context, u store.Unknown) (t store.Transition, ok bool) {
	t = store.Transition{ExecutionID: u.ID, Attempt: u.Attempts}
	log := e.logger.With(slog.String("key", u.Key), slog.Int64("execution_id", u.ID), slog.Int("attempt", u.Attempts))
	tool, known := e.toolset.Load().tools[u.Tool]
	if !known {
		return escalate(t, CodeUnverifiable, "the tool "+u.Tool+" is no longer configured, so the outcome cannot be verified"), true
	}
	switch {
	case tool.Verifier != nil:
		if mutant.On("resend-after-crash") { // planted bug: resent without asking the provider
			return e.notDone(t, u), true
		}
		// A key-unaware tool's first attempt may still land until its
		// settle time has passed since the outcome became unknown (an
		// expired claim's unknown is leased at once): a 404 read before
		// then proves nothing, so it is not asked yet.
		if settling := tool.VerifyAfter - u.DBNow.Sub(u.UpdatedAt); settling > 0 {
			if settling > maxInlineSettle {
				log.Info("the outcome is still settling; verifying later", slog.Duration("settling", settling))
				return t, false
			}
			select { // a short wait is cheaper than another lease
			case <-time.After(settling):
			case <-ctx.Done():
				return t, false
			}
		}
		v, err := verifyWith(ctx, tool, u.Execution)
		switch {
		case err == nil && v.Found:
			t.To = store.ExecSucceeded
			t.Status, t.Body, t.ProviderRef = v.Status, v.Body, v.ProviderRef
			t.EventData = map[string]any{"attempt": u.Attempts, "verified": true, "status": v.Status, "provider_ref": v.ProviderRef}
			log.Info("verified: the provider has the write")
			return t, true
		case err == nil:
			log.Info("verified: the provider does not have the write")
			return e.notDone(t, u), true
		}
		reason := err.Error()
		if u.DBNow.Sub(u.UpdatedAt) < e.window {
			log.Warn("verification inconclusive; will ask again", slog.String("reason", reason))
			return t, false
		}
		return escalate(t, CodeUnverifiable, reason), true
	case tool.KeyAware:
		// The provider deduplicates on the key: resending under the same key
		// either performs the write or returns the stored answer.
		if u.Attempts >= u.MaxAttempts {
			return escalate(t, CodeExhausted, "the outcome is unknown and no attempts are left for a same-key resend"), true
		}
		t.To, t.Resend = store.ExecReady, true
		if u.LastCode != nil {
			t.Code = *u.LastCode
		}
		t.Error = "resending under the same key: the provider honours it"
		t.EventData = map[string]any{"attempt": u.Attempts, "reason": "key_aware"}
		return t, true
	}
	return escalate(t, CodeUnverifiable, "the provider has no verify URL and does not honour keys, so only a human can say whether the write happened"), true
}

// notDone moves an unknown the provider does not have back to ready, or to
// failed when no attempts are left.
func (e *Executor) notDone(t store.Transition, u store.Unknown) store.Transition {
	if u.Attempts >= u.MaxAttempts {
		t.To = store.ExecFailed
		t.Code, t.Error = CodeExhausted, "the provider does not have the write and all "+strconv.Itoa(u.MaxAttempts)+" attempts are used"
		t.EventData = map[string]any{"attempt": u.Attempts, "verified": true, "found": false, "exhausted": true}
		return t
	}
	t.To = store.ExecReady
	t.Code, t.Error = CodeNotDone, "the provider does not have the write"
	t.EventData = map[string]any{"attempt": u.Attempts, "verified": true, "found": false}
	return t
}
