package main

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/store"
)

// leadership says whether this replica runs the fleet's sweeps (expiry,
// reconcile, card convergence, reminders, retention): Term returns the
// context of the current leadership, cancelled when it ends, and whether
// this replica leads. See docs/ARCHITECTURE.md, "One sweeper per fleet".
type leadership interface {
	Term() (context.Context, bool)
}

// soleLeader is the embedded store's leadership: its one process leads.
type soleLeader struct{}

func (soleLeader) Term() (context.Context, bool) { return context.Background(), true }

// newLeadership returns the store's leadership and, for a driver several
// processes share (PostgreSQL's sweep lock), the component that runs it;
// nil for the embedded store.
func newLeadership(d store.Driver, logger *slog.Logger) (leadership, component) {
	if e, ok := d.(store.LeaderElector); ok {
		l := e.SweepLeader(logger)
		return l, l
	}
	return soleLeader{}, nil
}

// registerLeaderGauge exports countersign_sweep_leader: 1 while this
// replica leads, 0 elsewhere.
func registerLeaderGauge(reg prometheus.Registerer, l leadership) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "countersign_sweep_leader",
		Help: "1 on the replica that runs the sweeps (expiry, reconcile, card convergence, reminders, retention), 0 elsewhere.",
	}, func() float64 {
		if _, leading := l.Term(); leading {
			return 1
		}
		return 0
	}))
}
