package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/countersign/countersign/executor/sender"
	"github.com/countersign/countersign/internal/mutant"
	"github.com/countersign/countersign/store"
)

// recordLinger is how long outcomes gather before they are written together.
const recordLinger = 5 * time.Millisecond

// DispatchOnce claims up to one batch of due executions, performs them
// concurrently and records their outcomes, and returns how many it claimed
// once every outcome is recorded. The claim commits before any send, and no
// transaction is open while a send is in flight. Outcomes are recorded as
// they arrive, gathered for a few milliseconds into one statement, so a slow
// send delays only its own record. ctx ending stops it from claiming, not
// what it has claimed: that runs to its outcome unless Stop's grace ends
// (see Stop).
func (e *Executor) DispatchOnce(ctx context.Context) (int, error) {
	return e.dispatch(ctx, nil)
}

// dispatch is DispatchOnce; full, if set, is called as soon as a claim comes
// back full, before the sends, so another loop can claim the next batch.
func (e *Executor) dispatch(ctx context.Context, full func()) (int, error) {
	ctx, leave, err := e.enter(ctx)
	if err != nil {
		return 0, err
	}
	defer leave()
	claims, err := e.db.ClaimExecutions(ctx, store.ClaimParams{
		Worker: e.worker, Limit: e.batch, ClaimTimeouts: e.toolset.Load().timeouts, Now: e.now(),
	})
	if err != nil || len(claims) == 0 {
		return 0, err
	}
	claimedAt := time.Now()
	if full != nil && len(claims) == e.batch {
		full()
	}
	verifiable := true
	for _, c := range claims {
		if t := e.toolset.Load().tools[c.Tool]; t.Verifier == nil && !t.KeyAware {
			verifiable = false
		}
	}

	results := make(chan store.Transition, len(claims))
	var wg sync.WaitGroup
	sem := make(chan struct{}, e.conc)
	for i := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if t, recorded := e.perform(ctx, claims[i], claimedAt); !recorded {
				results <- t
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()

	// ctx is not cancelled by shutdown (see enter): an outcome learnt at the
	// provider is worth writing even while shutting down.
	recCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var errs []error
	for t := range results {
		// Gather what arrives within a short linger: one statement (and one
		// commit) per handful of outcomes rather than per outcome.
		batch := []store.Transition{t}
		linger := time.NewTimer(recordLinger)
	more:
		for {
			select {
			case t, ok := <-results:
				if !ok {
					break more
				}
				batch = append(batch, t)
			case <-linger.C:
				break more
			}
		}
		linger.Stop()
		if err := e.record(recCtx, batch, verifiable); err != nil {
			// Those claims expire and the reconciler asks the provider.
			errs = append(errs, err)
		}
	}
	return len(claims), errors.Join(errs...)
}

// record writes a batch of outcomes of this worker's claims.
//
// When every outcome in the batch can be found again at the provider
// (verifiable: a verify URL, or a provider that honours keys), the commit does
// not wait for the WAL flush. The claim was durable before the send
// (write-ahead); an outcome lost with a database crash leaves its claim to
// expire and be verified like any other unknown. This matters because every
// outcome statement notifies listeners (the schema's triggers) and PostgreSQL
// serialises the commits of notifying transactions, flush included. Outcomes
// of tools that can be neither verified nor safely resent commit durably.
func (e *Executor) record(ctx context.Context, batch []store.Transition, verifiable bool) error {
	p := store.TransitionParams{
		From: store.ExecClaimed, Worker: e.worker, Actor: store.ExecutorActor(e.worker), Now: e.now(),
		AsyncCommit: verifiable,
	}
	applied, err := e.db.TransitionExecutions(ctx, p, batch)
	if err != nil {
		return err
	}
	e.observe(batch, applied)
	return nil
}

// perform runs one claimed execution up to its outcome. recorded is true when
// nothing is left to write: revalidation retired it (and wrote that), or the
// claim moved on.
func (e *Executor) perform(ctx context.Context, c store.Claim, claimedAt time.Time) (t store.Transition, recorded bool) {
	tool := e.toolset.Load().tools[c.Tool]
	// Built only when something is logged: this is the hot path.
	log := func() *slog.Logger {
		return e.logger.With(slog.String("key", c.Key), slog.Int64("execution_id", c.ID), slog.Int("attempt", c.Attempts))
	}
	base := store.Transition{ExecutionID: c.ID, Attempt: c.Attempts}

	if got := hashOf(c.Snapshot); got != c.SnapshotHash {
		log().Error("snapshot does not match the approved hash; refusing to send", slog.String("approved", c.SnapshotHash), slog.String("stored", got))
		return escalate(base, CodeSnapshotMismatch, "the stored snapshot does not hash to the approved "+c.SnapshotHash+"; nothing was sent"), false
	}
	if c.VerifyFirst {
		// Before revalidation: a write the provider already has is done,
		// whatever its approval's age or preconditions say now.
		if t, send, recorded := e.verifyFirst(ctx, tool, c, base, log()); !send {
			return t, recorded
		}
	}
	if c.Attempts == 1 || provenNotDone(tool, c.LastCode) {
		stale, err := e.revalidate(ctx, tool, c)
		if (stale != nil || err != nil) && ctx.Err() != nil {
			// Stop's grace ended during the check: it did not fail.
			// Nothing was sent; the claim expires to the reconciler.
			return base, true
		}
		if err != nil {
			log().Warn("the policy in force could not be re-checked; releasing the claim unsent", slog.String("error", err.Error()))
			return e.transitionFor(base, c.MaxAttempts, sender.Attempt{
				Outcome: sender.OutcomeRetry, Code: CodePolicyUnchecked,
				Message: "the policy in force could not be re-checked (" + err.Error() + "); nothing was sent",
			}), false
		}
		if stale != nil && stale.escalate {
			log().Warn("refusing to send", slog.String("code", stale.code), slog.String("reason", stale.msg))
			return escalate(base, stale.code, stale.msg), false
		}
		if stale != nil {
			// Recorded by supersede, or the claim moved on under us: either
			// way nothing more is written for this claim.
			e.supersede(ctx, tool, c, *stale, log())
			return base, true
		}
	}
	if ctx.Err() != nil {
		// Stop's grace ended before this send could start (it waited for
		// a slot): send nothing; the claim expires to the reconciler.
		return base, true
	}

	// A send must end before the claim does, or the reconciler could declare
	// it unknown and have it resent while it is still in flight. The claim's
	// expiry is read against the database clock it was set by.
	if deadline := claimedAt.Add(c.ClaimExpiresAt.Sub(c.DBNow)); time.Now().Add(tool.Timeout).After(deadline) {
		log().Warn("too little of the claim is left to send safely; releasing it")
		return e.transitionFor(base, c.MaxAttempts, sender.Attempt{
			Outcome: sender.OutcomeRetry, Code: CodeClaimTooShort,
			Message: "the claim had less time left than the tool's timeout; nothing was sent",
		}), false
	}

	start := time.Now()
	e.metrics.ClaimToDispatch.Observe(start.Sub(claimedAt).Seconds())
	if c.Attempts == 1 {
		e.metrics.ApprovalToDispatch.Observe(start.Sub(c.ApprovedAt).Seconds())
	}
	if e.onSend != nil {
		e.onSend(c, start)
	}
	// A send that has started runs to its answer or its tool's timeout even
	// on shutdown (ctx ends only with Stop's grace): cutting it off would
	// turn a known outcome into an unknown for the reconciler.
	at := e.send(ctx, tool, c)
	e.metrics.Attempts.WithLabelValues(string(at.Outcome), e.codeLabel(at.Code)).Inc()
	if e.logger.Enabled(ctx, slog.LevelDebug) {
		log().Debug("sent", slog.String("outcome", string(at.Outcome)), slog.String("code", at.Code), slog.Int("status", at.Status))
	}
	t = e.transitionFor(base, c.MaxAttempts, at)
	if t.To == store.ExecUnknown {
		// Not verified before the provider is done with what it got.
		t.Delay = tool.VerifyAfter
	}
	return t, false
}

// transitionFor turns a classified attempt into the row's next state.
func (e *Executor) transitionFor(t store.Transition, maxAttempts int, cl sender.Attempt) store.Transition {
	t.Status, t.Body, t.ProviderRef = cl.Status, cl.Body, cl.ProviderRef
	data := map[string]any{"attempt": t.Attempt, "outcome": string(cl.Outcome)}
	if cl.Status != 0 {
		data["status"] = cl.Status
	}
	if cl.Code != "" {
		data["code"] = cl.Code
	}
	if cl.ProviderRef != "" {
		data["provider_ref"] = cl.ProviderRef
	}
	t.EventData = data
	switch cl.Outcome {
	case sender.OutcomeSucceeded:
		t.To = store.ExecSucceeded
	case sender.OutcomeRetry:
		if t.Attempt >= maxAttempts {
			data["exhausted"] = true
			t.To = store.ExecFailed
			t.Code, t.Error = cl.Code, "gave up after "+strconv.Itoa(t.Attempt)+" attempts: "+cl.Message
			return t
		}
		delay := max(e.backoff(t.Attempt), cl.RetryAfter)
		data["retry_in_ms"] = delay.Milliseconds()
		t.To, t.Delay = store.ExecReady, delay
		t.Code, t.Error = cl.Code, cl.Message
	case sender.OutcomeVerify:
		t.To = store.ExecUnknown
		t.Code, t.Error = cl.Code, cl.Message
	case sender.OutcomeFatal:
		t.To = store.ExecFailed
		t.Code, t.Error = cl.Code, cl.Message
	case sender.OutcomeReview:
		t.To = store.ExecNeedsReview
		t.Code, t.Error = cl.Code, cl.Message
	}
	return t
}

// escalate sends a claimed execution to a human without sending anything.
func escalate(t store.Transition, code, msg string) store.Transition {
	t.To = store.ExecNeedsReview
	t.Code, t.Error = code, msg
	t.EventData = map[string]any{"attempt": t.Attempt, "code": code}
	return t
}

// observe counts the logical outcomes that took effect and notes the stale
// ones.
func (e *Executor) observe(batch []store.Transition, applied []store.Applied) {
	ok := make(map[int64]bool, len(applied))
	for _, a := range applied {
		ok[a.ExecutionID] = true
	}
	for _, t := range batch {
		if !ok[t.ExecutionID] {
			e.metrics.StaleOutcomes.Inc()
			e.logger.Warn("outcome not recorded: the claim had moved on", slog.Int64("execution_id", t.ExecutionID),
				slog.Int("attempt", t.Attempt), slog.String("state", string(t.To)))
			continue
		}
		if endsExecution(t.To) {
			e.metrics.Executions.WithLabelValues(string(t.To), e.codeLabel(t.Code)).Inc()
		}
		if t.To == store.ExecFailed || t.To == store.ExecNeedsReview {
			e.logger.Warn("execution "+string(t.To), slog.Int64("execution_id", t.ExecutionID), slog.String("code", t.Code))
		}
	}
}

// send makes one attempt of the exact snapshot bytes through the tool's
// sender, within the tool's timeout.
func (e *Executor) send(ctx context.Context, tool Tool, c store.Claim) sender.Attempt {
	w := writeOf(c.Execution)
	if !tool.KeyAware && mutant.Every("skip-unkeyed-write", 8) { // planted bug: not sent, recorded as refused
		return sender.Attempt{Outcome: sender.OutcomeFatal, Code: "invalid_request", Message: "422 Unprocessable Entity",
			Status: 422, Body: []byte(`{"error":{"code":"invalid_request"}}`)}
	}
	if tool.KeyAware && mutant.Every("key-plus-x", 8) { // planted bug: sent under another key
		w.Key += "x"
	}
	ctx, cancel := context.WithTimeout(ctx, tool.Timeout)
	defer cancel()
	return tool.Sender.Send(ctx, w)
}

// writeOf is what a sender is given of an execution.
func writeOf(x store.Execution) sender.Write {
	return sender.Write{Tool: x.Tool, Key: x.Key, RequestID: x.RequestID, Body: x.Snapshot}
}

// verifyWith asks the tool's verifier about x, within the tool's timeout.
func verifyWith(ctx context.Context, tool Tool, x store.Execution) (sender.Verification, error) {
	ctx, cancel := context.WithTimeout(ctx, tool.Timeout)
	defer cancel()
	return tool.Verifier.Verify(ctx, writeOf(x))
}

// hashOf is the payload hash as approvals records it.
func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
