package store

import (
	"context"
	"log/slog"
)

// SweepLeader is a replica's candidacy to run the fleet's sweeps (expiry,
// reconcile, card convergence, reminders, retention): Term returns the
// context of its current leadership, cancelled when that ends, and whether
// it leads. Start and Stop run it.
type SweepLeader interface {
	Term() (context.Context, bool)
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// LeaderElector is a driver that several processes share, which elects
// one of them to sweep. A driver that is not one serves one process, which
// leads.
type LeaderElector interface {
	SweepLeader(logger *slog.Logger) SweepLeader
}
