package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/internal/startstop"
	"github.com/countersign/countersign/store"
)

// The sweep lock is a session advisory lock of the two-key form, keyed by
// a namespace of countersign's own and the lock's number within it.
const (
	lockNamespace = 0x63736e // "csn"
	lockSweeps    = 1
)

// LeaderCheckInterval is how often a replica tries for the sweep lock, and
// how often the leader checks it still holds it.
const LeaderCheckInterval = 2 * time.Second

// Leader holds the sweep lock, a session advisory lock, on a connection of
// its own (never the pool's, whose connections come and go): the replica
// whose session holds it runs the fleet's sweeps. A replica that dies
// closes its session and PostgreSQL releases the lock; another replica
// takes it at its next try.
type Leader struct {
	db     *Driver
	logger *slog.Logger
	every  time.Duration

	mu      sync.Mutex
	term    context.Context // cancelled when this replica stops leading
	endTerm context.CancelFunc
	checks  atomic.Int64 // checks done, for tests to wait on rather than sleep

	startstop.Base // Start and Stop run Run in the background
}

var _ store.LeaderElector = (*Driver)(nil)

// SweepLeader returns the replica's candidacy for the sweep lock; Start
// runs it.
func (d *Driver) SweepLeader(logger *slog.Logger) store.SweepLeader { return d.Leader(logger) }

// Leader is SweepLeader's concrete type.
func (d *Driver) Leader(logger *slog.Logger) *Leader {
	return &Leader{db: d, logger: logger, every: LeaderCheckInterval}
}

// Term is the context of the current leadership and true while this
// replica leads; the context is cancelled the moment it stops leading.
func (l *Leader) Term() (context.Context, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term == nil {
		return nil, false
	}
	return l.term, true
}

// Start tries for the lock once, so a lone replica leads from the start,
// then keeps trying in the background until Stop, which closes the
// connection and so hands leadership on at once.
func (l *Leader) Start(ctx context.Context) error {
	ctx, err := l.StartInit(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("starting the sweep leadership: %w", err)
	}
	ctx = l.UntilStopping(ctx)
	conn, err := l.connect(ctx)
	if err == nil {
		err = l.check(ctx, conn)
	}
	if err != nil {
		// The background loop retries; a database down at start is
		// reported by whatever needs it.
		l.logger.Warn("trying for the sweep lock", slog.String("error", err.Error()))
	}
	return l.Go(func() { l.run(ctx, conn) })
}

// run holds a session (conn, when not nil, is the first) and tries for
// the lock every interval, reconnecting after a lost connection, until ctx
// ends.
func (l *Leader) run(ctx context.Context, conn *pgx.Conn) {
	for ctx.Err() == nil {
		err := l.session(ctx, conn)
		conn = nil
		l.stepDown(err)
		select {
		case <-ctx.Done():
		case <-time.After(l.every):
		}
	}
}

// session connects, unless conn is given, and checks the lock every
// interval; it returns when the connection fails, the lock is gone or ctx
// ends.
func (l *Leader) session(ctx context.Context, conn *pgx.Conn) error {
	if conn == nil {
		var err error
		if conn, err = l.connect(ctx); err != nil {
			return err
		}
	}
	defer conn.Close(context.Background()) // ends the session: the lock goes with it
	tick := time.NewTicker(l.every)
	defer tick.Stop()
	for {
		if err := l.check(ctx, conn); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (l *Leader) connect(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, l.every)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.db.Pool.Config().ConnConfig.Copy())
	return conn, unavailable(err)
}

// check tries for the lock when this replica does not lead, and otherwise
// asks whether its session still holds it. Each answer must come within
// the interval: a leader that cannot tell steps down rather than sweep on
// a belief.
func (l *Leader) check(ctx context.Context, conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, l.every)
	defer cancel()
	defer l.checks.Add(1)
	if _, leading := l.Term(); leading {
		var held bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
			AND pid = pg_backend_pid() AND classid::int8 = $1 AND objid::int8 = $2 AND objsubid = 2 AND granted)`,
			int64(lockNamespace), int64(lockSweeps)).Scan(&held); err != nil {
			return err
		}
		if !held {
			return errors.New("the session no longer holds the sweep lock")
		}
		return nil
	}
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", int32(lockNamespace), int32(lockSweeps)).Scan(&got); err != nil {
		return err
	}
	if got {
		l.stepUp()
	}
	return nil
}

func (l *Leader) stepUp() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.term, l.endTerm = context.WithCancel(context.Background())
	l.logger.Info("leading the sweeps: this replica runs expiry, reconcile, card convergence, reminders and retention")
}

// stepDown ends the term, if any: the sweeps running on it are cancelled.
func (l *Leader) stepDown(cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term == nil {
		return
	}
	l.endTerm()
	l.term, l.endTerm = nil, nil
	attrs := []any{}
	if cause != nil {
		attrs = append(attrs, slog.String("error", cause.Error()))
	}
	l.logger.Warn("no longer leading the sweeps: another replica takes them", attrs...)
}
