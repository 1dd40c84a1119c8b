package embedded

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/countersign/countersign/internal/namedsql"
	"github.com/countersign/countersign/store"
)

// Driver is the ledger in one SQLite file. It wakes its own subscribers
// (store.Notifier) after each commit that changes what they wait for.
type Driver struct {
	hub *store.Hub
	// writer holds a single connection: writes queue for it in Go instead of
	// spinning on SQLITE_BUSY, and each begins IMMEDIATE (see dsn).
	writer *sql.DB
	// reader serves statements that only read; WAL lets them run beside the
	// writer and see the last commit.
	reader *sql.DB
	// migrating serialises Migrate calls in this process; SQLite has no
	// advisory lock for goose to take.
	migrating sync.Mutex
	// lock is the ledger's lock held shared while it is open (lockLedger):
	// a Restore never replaces the file under it.
	lock *os.File
}

var _ store.Driver = (*Driver)(nil)

// Open opens the ledger file at path, creating it if missing. Call Migrate
// before first use. It fails with ErrInUse while a Restore replaces the
// file.
func Open(ctx context.Context, path string) (*Driver, error) {
	if strings.Contains(path, "?") {
		return nil, fmt.Errorf("opening %s: the path may not contain '?'", path)
	}
	lock, err := lockLedger(path, false)
	if errors.Is(err, ErrInUse) {
		return nil, fmt.Errorf("opening %s: a restore is replacing it (%w); start again once it is done", path, err)
	}
	if err != nil {
		return nil, err
	}
	d, err := open(ctx, path, busyTimeout)
	if err != nil {
		lock.Close()
		return nil, err
	}
	d.lock = lock
	return d, nil
}

// busyTimeout is how long a statement waits for a write lock another
// process holds before failing (store.ErrUnavailable).
const busyTimeout = 10 * time.Second

func open(ctx context.Context, path string, busyTimeout time.Duration) (*Driver, error) {
	// The driver reads options after the first '?'; such a path would be cut.
	if strings.Contains(path, "?") {
		return nil, fmt.Errorf("opening %s: the path may not contain '?'", path)
	}
	// The ledger holds every effect; a new file is readable by its owner
	// only (SQLite gives its -wal and -shm files the same mode).
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	f.Close()
	writer, err := sql.Open("sqlite", dsn(path, false, busyTimeout))
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	// The writer connects first, so the file exists and is in WAL mode before
	// a reader opens it.
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	reader, err := sql.Open("sqlite", dsn(path, true, busyTimeout))
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	reader.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	return &Driver{hub: store.NewHub(), writer: writer, reader: reader}, nil
}

// dsn configures every connection:
//   - WAL: readers never block the writer nor the writer them.
//   - synchronous FULL: a commit is on disk when it returns. NORMAL may lose
//     the last commits on power loss, and a lost claim breaks write-ahead (a
//     write sent under a claim the ledger no longer remembers).
//   - busy_timeout: another process holding the write lock is waited for,
//     up to busyTimeout; past it the call fails as store.ErrUnavailable.
//   - _txlock=immediate: every transaction takes the write lock at BEGIN, so
//     a claim's select and update see no commit in between and two
//     transactions never deadlock upgrading a read lock.
//   - query_only on reader connections, so a write can never bypass the
//     serialised writer.
func dsn(path string, readOnly bool, busyTimeout time.Duration) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	}
	// Without a "file:" prefix the driver takes the options off and opens
	// path as a plain file name.
	return path + "?" + q.Encode()
}

// Ping reports whether the file answers.
func (s *Driver) Ping(ctx context.Context) error {
	if err := s.writer.PingContext(ctx); err != nil {
		return wrap("pinging the writer", err)
	}
	return wrap("pinging the readers", s.reader.PingContext(ctx))
}

// Close closes both connection pools, then lets go of the ledger's lock.
func (s *Driver) Close() {
	s.reader.Close()
	s.writer.Close()
	if s.lock != nil {
		s.lock.Close()
	}
}

// Reader reads on the reader pool.
func (s *Driver) Reader() store.Reader { return executor{d: s} }

// Batch is nil: in-process statements cost no round trip to save.
func (s *Driver) Batch() store.BatchExecutor { return nil }

// Notifier is the driver itself: its commits wake its subscribers, so
// there is no loop to run.
func (s *Driver) Notifier(*slog.Logger) (store.Notifier, store.Service, <-chan struct{}) {
	listening := make(chan struct{})
	close(listening)
	return s.hub, nil, listening
}

// Remote is false: statements run in-process.
func (s *Driver) Remote() bool { return false }

//go:embed queries.sql
var queryFile embed.FS

// q holds the driver's statements (queries.sql).
var q = namedsql.MustLoad(queryFile, "queries.sql")
