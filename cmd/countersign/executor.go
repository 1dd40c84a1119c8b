package main

import (
	"context"
	"log/slog"

	"github.com/countersign/countersign/executor"
)

// addExecutor builds the executor, registers its metrics, schedules the
// dispatch and reconcile sweeps, and adds it to the start order: its
// dispatch loops, which the listener wakes the moment an approval commits,
// stop claiming at the signal, and Stop waits, within the executor's grace,
// for what they claimed.
func (a *app) addExecutor() (*executor.Executor, error) {
	logger := a.logger.With("component", "executor")
	wake, unsubscribe := a.notifier.SubscribeReady()
	ex := executor.New(executor.Config{
		DB:      a.db,
		Tools:   a.cfg.ExecutorTools(),
		Secrets: a.cfg.DispatchSecrets(),
		Logger:  logger,
		Metrics: executor.NewMetrics(a.registry),
		Wake:    wake,
	})
	if err := a.sched.add("dispatch", a.cfg.File.Executor.DispatchSchedule, func(ctx context.Context) error {
		_, err := ex.Drain(ctx)
		return err
	}); err != nil {
		unsubscribe()
		return nil, err
	}
	if err := a.sched.addLeaderSweep("reconcile", a.cfg.File.Executor.ReconcileSchedule, func(ctx context.Context) error {
		_, err := ex.ReconcileOnce(ctx)
		return err
	}); err != nil {
		unsubscribe()
		return nil, err
	}
	a.add("executor", funcs{
		start: func(ctx context.Context) error {
			if err := ex.Start(ctx); err != nil {
				return err
			}
			logger.Info("executor started", slog.String("worker", ex.Worker()), slog.Int("tools", len(a.cfg.File.Tools)),
				slog.Duration("shutdown_grace", ex.ShutdownGrace()))
			return nil
		},
		stop: func(ctx context.Context) error {
			defer unsubscribe()
			return ex.Stop(ctx)
		},
	}, ex.ShutdownGrace())
	return ex, nil
}
