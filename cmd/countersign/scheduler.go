package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/robfig/cron/v3"
)

// scheduler runs the sweeps (expiry, dispatch, reconcile, card convergence)
// on robfig/cron. A sweep that is still running when its next tick comes is
// skipped; a panic in one is logged.
type scheduler struct {
	cron   *cron.Cron
	logger *slog.Logger
	ctx    context.Context // what the sweeps run on; set by Start
	cancel context.CancelFunc
	names  []string
}

func newScheduler(logger *slog.Logger) *scheduler {
	cl := cronLogger{logger}
	return &scheduler{
		cron:   cron.New(cron.WithChain(cron.SkipIfStillRunning(cl), cron.Recover(cl)), cron.WithLogger(cl)),
		logger: logger,
	}
}

// add schedules sweep under name on spec. The sweep's context ends when
// Start's context does or Stop is called.
func (s *scheduler) add(name, spec string, sweep func(ctx context.Context) error) error {
	_, err := s.cron.AddFunc(spec, func() {
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
	if s.cancel != nil {
		return errors.New("scheduler already started")
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.cron.Start()
	return nil
}

// Stop ends the sweeps' context, stops the schedule and waits, until ctx
// ends, for the sweeps still running.
func (s *scheduler) Stop(ctx context.Context) error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	select {
	case <-s.cron.Stop().Done():
		return nil
	case <-ctx.Done():
		return errors.New("sweeps still running at shutdown")
	}
}

// cronLogger adapts slog to robfig/cron's logger.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append(kv, "error", err.Error())...)
}
