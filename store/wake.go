package store

import "context"

// Wakeups are the waiters a transition's commit wakes: the waiters on each
// changed request (long-polling agents), and the dispatcher when an
// execution became ready to claim. The Ledger decides them with the
// transition's other rules; a driver only delivers them (Executor.Notify).
type Wakeups struct {
	Changed []string // request ids
	Ready   bool
}

// empty reports whether w wakes nobody.
func (w Wakeups) empty() bool { return len(w.Changed) == 0 && !w.Ready }

// changed wakes the waiters on ids.
func changed(ids ...string) Wakeups { return Wakeups{Changed: ids} }

// notify hands w to ex, to be delivered when ex's transaction commits.
func notify(ctx context.Context, ex Executor, w Wakeups) error {
	if w.empty() {
		return nil
	}
	return ex.Notify(ctx, w)
}

// wakesReady reports whether an execution entering to may be claimed.
func wakesReady(to ExecState) bool { return to == ExecReady }
