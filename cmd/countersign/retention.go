package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
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
// retention sweep prunes it, leaving its key as a tombstone, and how long
// the audit trail is kept before whole months of it are dropped. Each
// unset keeps everything, as before retention existed. VerifySchedule,
// when set, has serve verify the audit trail on that schedule (see
// auditVerifier); AnchorSchedule has it take an anchor of the trail, to
// AnchorFile or else to the log (see auditAnchorer).
type RetentionConfig struct {
	Requests       Window `yaml:"requests"`
	Audit          Window `yaml:"audit"`
	Schedule       string `yaml:"schedule"`
	VerifySchedule string `yaml:"verify_schedule"`
	AnchorSchedule string `yaml:"anchor_schedule"`
	AnchorFile     string `yaml:"anchor_file"`
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

// Validate reports a schedule that is not a cron schedule, and an audit
// window shorter than the requests' one: the audit trail tells what
// happened to the requests still there, so it outlives them; a request
// whose events were gone could no longer be checked against its history.
// The windows were checked, at their lines, as the file was read.
func (r RetentionConfig) Validate() error {
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	if _, err := parser.Parse(r.Schedule); err != nil {
		return fmt.Errorf("retention.schedule %q is not a cron schedule (use a 5-field spec or @every 10m): %v", r.Schedule, err)
	}
	if r.VerifySchedule != "" {
		if _, err := parser.Parse(r.VerifySchedule); err != nil {
			return fmt.Errorf("retention.verify_schedule %q is not a cron schedule (use a 5-field spec or @daily): %v", r.VerifySchedule, err)
		}
	}
	if r.AnchorSchedule != "" {
		if _, err := parser.Parse(r.AnchorSchedule); err != nil {
			return fmt.Errorf("retention.anchor_schedule %q is not a cron schedule (use a 5-field spec or @daily): %v", r.AnchorSchedule, err)
		}
	}
	if r.AnchorFile != "" && r.AnchorSchedule == "" {
		return errors.New("retention.anchor_file is set without retention.anchor_schedule: say when serve takes the anchor")
	}
	if r.Audit != 0 && r.Requests != 0 && r.Audit < r.Requests {
		return fmt.Errorf("retention.audit (%s) is shorter than retention.requests (%s): the audit trail must outlive the requests it tells of",
			time.Duration(r.Audit), time.Duration(r.Requests))
	}
	return nil
}

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
	if window > 0 && window < ShortWindow {
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
