package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/countersign/countersign/store"
)

// RetentionConfig says how long a settled request is kept before the
// retention sweep prunes it, leaving its key as a tombstone. Requests
// unset keeps every request, as before retention existed.
type RetentionConfig struct {
	Requests Window `yaml:"requests"`
	Schedule string `yaml:"schedule"`
}

// Window is a retention window: a Go duration (36h, 90s) or whole days
// (90d). It is at least MinWindow.
type Window time.Duration

// MinWindow is the shortest window accepted (so tests can use seconds);
// serve warns below ShortWindow.
const (
	MinWindow   = time.Second
	ShortWindow = 24 * time.Hour
)

const defaultRetentionSchedule = "@every 10m"

var windowType = reflect.TypeFor[Window]()

// ParseWindow reads a window: whole days written as 90d, or any Go
// duration, of MinWindow or more.
func ParseWindow(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100*365 {
			return 0, fmt.Errorf("%q is not a window; write it like 90d, 36h or 30s", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a window; write it like 90d, 36h or 30s", s)
		}
	}
	if d < MinWindow {
		return 0, fmt.Errorf("%q is shorter than %s", s, MinWindow)
	}
	return d, nil
}

// UnmarshalYAML reads a window (ParseWindow). One it cannot read is left
// zero without an error: checkYAML has reported it at its line, and an
// error here would stop the decoding of the rest of the file, whose
// problems Validate reports too.
func (w *Window) UnmarshalYAML(n *yaml.Node) error {
	d, _ := ParseWindow(n.Value)
	*w = Window(d)
	return nil
}

// MarshalYAML writes a window as the file would: whole days as 90d, any
// other as a Go duration (config check prints it so).
func (w Window) MarshalYAML() (any, error) {
	d := time.Duration(w)
	if d == 0 {
		return nil, nil // unset: config check leaves it out
	}
	if day := 24 * time.Hour; d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d", nil
	}
	return d.String(), nil
}

// Validate reports a schedule that is not a cron schedule; the window was
// checked, at its line, as the file was read.
func (r RetentionConfig) Validate() error {
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	if _, err := parser.Parse(r.Schedule); err != nil {
		return fmt.Errorf("retention.schedule %q is not a cron schedule (use a 5-field spec or @every 10m): %v", r.Schedule, err)
	}
	return nil
}

// retentionSweep prunes, on each run, the requests settled longer than
// window ago, and reports how many went.
type retentionSweep struct {
	db     store.Store
	window time.Duration
	logger *slog.Logger
	pruned prometheus.Counter
	now    func() time.Time
}

func newRetentionSweep(db store.Store, window time.Duration, logger *slog.Logger, reg prometheus.Registerer) *retentionSweep {
	pruned := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "countersign_requests_pruned_total",
		Help: "Settled requests pruned by the retention sweep; each left a tombstone of its key.",
	})
	reg.MustRegister(pruned)
	return &retentionSweep{db: db, window: window, logger: logger, pruned: pruned, now: time.Now}
}

// runOnce prunes what the window lets go.
func (s *retentionSweep) runOnce(ctx context.Context) (int, error) {
	before := s.now().Add(-s.window)
	n, err := s.db.Prune(ctx, store.PruneParams{Before: before})
	s.pruned.Add(float64(n))
	if n > 0 {
		s.logger.Info("pruned settled requests", slog.Int("requests", n), slog.Time("settled_before", before))
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return n, err
	}
	return n, nil
}

// addRetention schedules the retention sweep when a window is configured.
func (a *app) addRetention() error {
	r := a.cfg.File.Retention
	if r.Requests == 0 {
		return nil
	}
	window := time.Duration(r.Requests)
	logger := a.logger.With("component", "retention")
	if window < ShortWindow {
		logger.Warn("retention.requests is shorter than a day: settled requests, and the callbacks and cards of late answers, go soon after they settle",
			slog.Duration("window", window))
	}
	sweep := newRetentionSweep(a.db, window, logger, a.registry)
	return a.sched.addLeaderSweep("retention", r.Schedule, func(ctx context.Context) error {
		_, err := sweep.runOnce(ctx)
		return err
	})
}
