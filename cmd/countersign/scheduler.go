package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"

	"github.com/countersign/countersign/internal/startstop"
)

// scheduler runs the sweeps (expiry, dispatch, reconcile, card convergence)
// on robfig/cron. A sweep that is still running when its next tick comes is
// skipped; a panic in one is logged. The fleet's sweeps run only on the
// replica that leads (addLeaderSweep); dispatch runs on every replica.
type scheduler struct {
	cron   *cron.Cron
	logger *slog.Logger
	leader leadership
	runs   *prometheus.CounterVec // countersign_sweep_runs_total
	ctx    context.Context        // what the sweeps run on; set by Start
	names  []string

	startstop.Base // each sweep is work Stop waits for
}

func newScheduler(logger *slog.Logger, leader leadership, reg prometheus.Registerer) *scheduler {
	cl := cronLogger{logger}
	runs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "countersign_sweep_runs_total",
		Help: "Sweeps this replica ran, by sweep.",
	}, []string{"sweep"})
	reg.MustRegister(runs)
	return &scheduler{
		cron:   cron.New(cron.WithChain(cron.SkipIfStillRunning(cl), cron.Recover(cl)), cron.WithLogger(cl)),
		logger: logger,
		leader: leader,
		runs:   runs,
	}
}

// addLeaderSweep schedules a sweep the fleet runs once: on each tick it
// runs only if this replica leads, on a context also cancelled when the
// leadership ends mid-sweep.
func (s *scheduler) addLeaderSweep(name, spec string, sweep func(ctx context.Context) error) error {
	runs := s.runs.WithLabelValues(name)
	return s.schedule(name, spec, func(ctx context.Context) error {
		term, leading := s.leader.Term()
		if !leading {
			return nil
		}
		runs.Inc()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(term, cancel)()
		if err := sweep(ctx); err != nil && term.Err() == nil {
			return err
		}
		return nil // cut short by the end of the leadership: the next leader sweeps again
	})
}

// add schedules sweep under name on spec, on every replica.
func (s *scheduler) add(name, spec string, sweep func(ctx context.Context) error) error {
	runs := s.runs.WithLabelValues(name)
	return s.schedule(name, spec, func(ctx context.Context) error {
		runs.Inc()
		return sweep(ctx)
	})
}

// schedule runs sweep under name on spec, unless Stop has begun. The
// sweep's context ends when Start's context does or Stop is called.
func (s *scheduler) schedule(name, spec string, sweep func(ctx context.Context) error) error {
	_, err := s.cron.AddFunc(spec, func() {
		_, leave, err := s.Enter(s.ctx)
		if err != nil {
			return
		}
		defer leave()
		if err := sweep(s.ctx); err != nil && s.ctx.Err() == nil {
			s.logger.Error(name+" sweep failed", slog.String("error", err.Error()))
		}
	})
	if err != nil {
		return fmt.Errorf("scheduling %s: %w", name, err)
	}
	s.names = append(s.names, name)
	return nil
}

// Start starts the schedule and returns.
func (s *scheduler) Start(ctx context.Context) error {
	ctx, err := s.StartInit(ctx)
	if err != nil {
		return fmt.Errorf("starting the scheduler: %w", err)
	}
	s.ctx = s.UntilStopping(ctx)
	s.cron.Start()
	return s.Go(func() {
		<-s.Stopping()
		<-s.cron.Stop().Done()
	})
}

// Stop ends the sweeps' context, stops the schedule and waits, until ctx
// ends, for the sweeps still running.
func (s *scheduler) Stop(ctx context.Context) error {
	if err := s.Base.Stop(ctx); err != nil {
		return fmt.Errorf("sweeps still running at shutdown: %w", err)
	}
	return nil
}

// cronLogger adapts slog to robfig/cron's logger.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append(kv, "error", err.Error())...)
}
