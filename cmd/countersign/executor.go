package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/countersign/countersign/executor"
)

// executorTools turns the operator's tool configuration into the executor's.
// Dispatch targets come only from here, never from an agent's request.
func (c *Config) executorTools() map[string]executor.Tool {
	tools := make(map[string]executor.Tool, len(c.File.Tools))
	for name, t := range c.File.Tools {
		et := executor.Tool{
			Name: name, Method: t.Dispatch.Method, URL: t.Dispatch.URL, Headers: t.Dispatch.Headers,
			Timeout: t.Dispatch.Timeout, KeyAware: t.KeyAware, MaxAttempts: t.MaxAttempts,
			ClaimTimeout: t.ClaimTimeout, ApprovalTTL: t.ApprovalTTL, RequestTTL: t.RequestTTL,
		}
		if t.Verify != nil {
			et.Verify = &executor.Endpoint{URL: t.Verify.URL, Headers: t.Verify.Headers}
		}
		if t.Precondition != nil {
			et.Precondition = &executor.Endpoint{URL: t.Precondition.URL, Headers: t.Precondition.Headers}
		}
		tools[name] = et
	}
	return tools
}

// startExecutor builds the executor, registers its metrics, schedules the
// dispatch and reconcile sweeps on the cron, and starts the dispatch loops
// that the listener wakes the moment an approval commits. They stop claiming
// when ctx ends; shutdown waits for what they claimed.
func (a *app) startExecutor(ctx context.Context) (*executor.Executor, error) {
	logger := a.logger.With("component", "executor")
	wake, unsubscribe := a.notifier.SubscribeReady()
	ex := executor.New(executor.Config{
		DB:      a.db,
		Tools:   a.cfg.executorTools(),
		Secret:  []byte(a.cfg.DispatchSecret),
		Logger:  logger,
		Metrics: executor.NewMetrics(a.registry),
		Wake:    wake,
	})
	if _, err := a.cron.AddFunc(a.cfg.File.Executor.DispatchSchedule, func() {
		if _, err := ex.Drain(ctx); err != nil && ctx.Err() == nil {
			logger.Error("dispatch sweep failed", slog.String("error", err.Error()))
		}
	}); err != nil {
		unsubscribe()
		return nil, fmt.Errorf("scheduling dispatch: %w", err)
	}
	if _, err := a.cron.AddFunc(a.cfg.File.Executor.ReconcileSchedule, func() {
		if _, err := ex.ReconcileOnce(ctx); err != nil && ctx.Err() == nil {
			logger.Error("reconcile sweep failed", slog.String("error", err.Error()))
		}
	}); err != nil {
		unsubscribe()
		return nil, fmt.Errorf("scheduling reconcile: %w", err)
	}
	if err := ex.Start(ctx); err != nil {
		unsubscribe()
		return nil, err
	}
	a.unsubscribe = unsubscribe
	logger.Info("executor started", slog.String("worker", ex.Worker()), slog.Int("tools", len(a.cfg.File.Tools)),
		slog.Duration("shutdown_grace", ex.ShutdownGrace()))
	return ex, nil
}
