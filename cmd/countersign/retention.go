package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store"
)

// retentionSweep prunes, on each run, the requests settled longer than
// window ago, and reports how many went. It also creates the audit
// trail's partitions ahead and, with an audit window, drops its whole
// months older than that (auditWindow zero keeps them).
type retentionSweep struct {
	db           store.Store
	window       time.Duration
	auditWindow  time.Duration
	logger       *slog.Logger
	pruned       prometheus.Counter
	monthsPruned prometheus.Counter
	now          func() time.Time
}

func newRetentionSweep(db store.Store, window, auditWindow time.Duration, logger *slog.Logger, reg prometheus.Registerer) *retentionSweep {
	pruned := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "countersign_requests_pruned_total",
		Help: "Settled requests pruned by the retention sweep; each left a tombstone of its key.",
	})
	months := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "countersign_audit_months_dropped_total",
		Help: "Whole months of audit events dropped by the retention sweep; each left a checkpoint.",
	})
	reg.MustRegister(pruned, months)
	return &retentionSweep{db: db, window: window, auditWindow: auditWindow, logger: logger, pruned: pruned,
		monthsPruned: months, now: time.Now}
}

// runOnce prunes what the windows let go.
func (s *retentionSweep) runOnce(ctx context.Context) (int, error) {
	if _, err := s.db.PrepareAuditMonths(ctx); err != nil {
		return 0, err
	}
	n := 0
	if s.window > 0 {
		before := s.now().Add(-s.window)
		var err error
		n, err = s.db.Prune(ctx, store.PruneParams{Before: before})
		s.pruned.Add(float64(n))
		if n > 0 {
			s.logger.Info("pruned settled requests", slog.Int("requests", n), slog.Time("settled_before", before))
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			return n, err
		}
	}
	if s.auditWindow > 0 {
		before := s.now().Add(-s.auditWindow)
		months, err := s.db.DropAudit(ctx, before)
		s.monthsPruned.Add(float64(months))
		if months > 0 {
			s.logger.Info("dropped whole months of audit events, each leaving a checkpoint", slog.Int("months", months),
				slog.Time("ended_before", before))
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			return n, err
		}
	}
	return n, nil
}

// addRetention schedules the retention sweep. It runs with no window too:
// the audit trail's partitions are created ahead by it, whatever is kept.
// With retention.verify_schedule it schedules the audit's verification,
// with retention.anchor_schedule its anchor.
func (a *app) addRetention() error {
	r := a.cfg.File.Retention
	window := time.Duration(r.Requests)
	logger := a.logger.With("component", "retention")
	if window > 0 && window < config.ShortWindow {
		logger.Warn("retention.requests is shorter than a day: settled requests, and the callbacks and cards of late answers, go soon after they settle",
			slog.Duration("window", window))
	}
	sweep := newRetentionSweep(a.db, window, time.Duration(r.Audit), logger, a.registry)
	if err := a.sched.addLeaderSweep("retention", r.Schedule, func(ctx context.Context) error {
		_, err := sweep.runOnce(ctx)
		return err
	}); err != nil {
		return err
	}
	if r.VerifySchedule != "" {
		verifier := newAuditVerifier(a.db, a.logger.With("component", "audit"), a.registry)
		// One replica verifies for the fleet: it reads every event.
		if err := a.sched.addLeaderSweep("audit verify", r.VerifySchedule, verifier.runOnce); err != nil {
			return err
		}
	}
	if r.AnchorSchedule == "" {
		return nil
	}
	if r.AnchorFile != "" {
		// Found out now rather than at the first anchor, hours later.
		if info, err := os.Stat(filepath.Dir(r.AnchorFile)); err != nil || !info.IsDir() {
			return fmt.Errorf("retention.anchor_file %q: its directory is not there to write the anchor in", r.AnchorFile)
		}
	}
	anchorer := newAuditAnchorer(a.db, r.AnchorFile, a.logger.With("component", "audit"), a.registry)
	// One replica anchors for the fleet, the one that leads: the file is
	// written on its machine.
	return a.sched.addLeaderSweep("audit anchor", r.AnchorSchedule, anchorer.runOnce)
}
