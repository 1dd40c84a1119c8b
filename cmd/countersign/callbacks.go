package main

import (
	"context"
	"log/slog"
	"sort"

	"github.com/countersign/countersign/callback"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/store"
)

// addCallbacks adds the deliverer to the start order (the ledger was told
// which agents have a callback when it was opened, ledgerOptions). Stop
// lets the deliveries in flight finish within one POST's timeout; any cut
// off are sent again after their lease.
func (a *app) addCallbacks() {
	targets := a.cfg.CallbackTargets()
	names := make([]string, 0, len(targets))
	for name := range targets {
		names = append(names, name)
	}
	sort.Strings(names)
	logger := a.logger.With("component", "callbacks")
	c := a.cfg.File.Callbacks
	d := callback.New(callback.Config{
		DB: a.db,
		Render: func(ctx context.Context, cb store.Callback) ([]byte, error) {
			return hook.CallbackBody(ctx, a.review, cb)
		},
		Targets:   targets,
		Timeout:   c.Timeout,
		Poll:      c.Poll,
		RetryBase: c.RetryBase,
		Logger:    logger,
		Metrics:   callback.NewMetrics(a.registry),
	})
	a.callbacks = d
	grace := c.Timeout
	if grace <= 0 {
		grace = callback.DefaultTimeout
	}
	a.add("callback deliverer", funcs{
		start: func(ctx context.Context) error {
			if err := d.Start(ctx); err != nil {
				return err
			}
			// Agent names only: the URLs and secrets stay out of the log.
			logger.Info("callback delivery started", slog.Any("agents", names))
			return nil
		},
		stop: d.Stop,
	}, grace)
}
