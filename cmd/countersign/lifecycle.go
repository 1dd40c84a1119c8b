package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// component is a part of serve that runs in the background: Start returns
// once it has started, Stop returns once everything it runs has ended, or
// when ctx ends, with an error saying what was left.
type component interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// part is a named component in serve's ordered list.
type part struct {
	name string
	component
	// grace bounds Stop, counted from the shutdown signal; zero: Stop is
	// waited for without a deadline (the component ends as soon as asked).
	grace time.Duration
}

// lifecycle starts its parts in order and stops them in reverse order,
// each after the one started after it has ended.
type lifecycle struct {
	parts   []part
	started int
	logger  *slog.Logger
}

// start starts every part in order. If one fails, those already started are
// stopped, in reverse order, before start returns the error.
func (l *lifecycle) start(ctx context.Context) error {
	for _, p := range l.parts[l.started:] {
		if err := p.Start(ctx); err != nil {
			l.stop(time.Now())
			return fmt.Errorf("starting the %s: %w", p.name, err)
		}
		l.started++
	}
	return nil
}

// stop stops the started parts in reverse order, waiting for each within
// its grace counted from from (when the shutdown signal arrived).
func (l *lifecycle) stop(from time.Time) {
	for ; l.started > 0; l.started-- {
		p := l.parts[l.started-1]
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if p.grace > 0 {
			ctx, cancel = context.WithDeadline(ctx, from.Add(p.grace))
		}
		if err := p.Stop(ctx); err != nil {
			l.logger.Warn("stopped before everything it runs had ended", slog.String("component", p.name), slog.String("error", err.Error()))
		}
		cancel()
	}
}

// funcs makes a component of two functions; either may be nil.
type funcs struct {
	start func(ctx context.Context) error
	stop  func(ctx context.Context) error
}

func (f funcs) Start(ctx context.Context) error {
	if f.start == nil {
		return nil
	}
	return f.start(ctx)
}

func (f funcs) Stop(ctx context.Context) error {
	if f.stop == nil {
		return nil
	}
	return f.stop(ctx)
}
