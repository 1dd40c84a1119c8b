package main

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/namedsql"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// Intake beside the sweep: 8 clients, each submitting a new intent every
// 40 ms (200 a second, a tenth of what intake commits flat out here), paced
// so a slow answer shows as latency rather than as fewer intents.
const (
	retentionClients = 8
	retentionPace    = 40 * time.Millisecond
	// The seeded requests settled two hours ago and more; intake's stay
	// pending.
	retentionWindow = time.Hour
)

// BenchmarkRetention: the retention sweep (retentionSweep.runOnce, which
// calls Ledger.Prune with the default batch) over 1,000,000 settled
// requests on PostgreSQL, each with its decision, vote, execution, card,
// outbox rows, callback and audit events (storetest.Seed, Trail), while new
// intents arrive through the group-commit batcher as serve wires it. It
// reports the rows pruned per second, the longest batch transaction (the
// longest any batch held its row locks) and its statements' longest times,
// intake p50 and p99 alone and beside the sweep, and the time any session
// of the database waited on a lock during the sweep (sampled every 5 ms).
// Afterwards it checks that every seeded key left a tombstone with its
// outcome, that no row of a settled request is left but its events, and
// that every intent intake accepted is stored.
//
// With -short (the smoke run in make test) it seeds 2,000 requests and
// measures intake alone for a second; COUNTERSIGN_BENCH_REQUESTS sets
// another count.
//
//	go test ./cmd/countersign -run '^$' -bench Retention -benchtime 1x -timeout 60m
func BenchmarkRetention(b *testing.B) {
	rows := storetest.SeedSize(b, 1_000_000, 2000)
	alone := 20 * time.Second
	if testing.Short() {
		alone = time.Second
	}
	ctx := context.Background()
	url := storetest.NewURL(b)
	db, err := postgres.Open(ctx, url+"&pool_max_conns=16")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	// The sweep's own pool, named so the sessions it runs can be told
	// from intake's.
	sweepDB, err := postgres.Open(ctx, url+"&application_name=retention")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(sweepDB.Close)
	storetest.SeedLedger(b, db, storetest.Seed{Requests: rows, Trail: true})
	outcomes := settledOutcomes(b, db)
	events := count(b, db, `SELECT count(*) FROM events`)
	b.Logf("seeded outcomes %v, %d events", outcomes, events)

	svcCtx, stopService := context.WithCancel(ctx)
	defer stopService()
	svc := benchService(svcCtx, store.NewLedger(db, store.Options{}))
	// The sweep's ledger is behind a driver that times each batch
	// transaction and its statements.
	timed := &timedDriver{Driver: sweepDB}
	sweep := newRetentionSweep(store.NewLedger(timed, store.Options{}), retentionWindow, 0,
		slog.New(slog.DiscardHandler), prometheus.NewRegistry())

	if !testing.Short() {
		logBatchPlans(b, db)
	}

	for range b.N {
		in := startIntake(ctx, b, svc)
		warm := time.Now().Add(time.Second)
		waitUntil(warm.Add(alone))
		watch := watchSessions(ctx, b, db)
		sweepStart := time.Now()
		pruned, err := sweep.runOnce(ctx)
		sweepEnd := time.Now()
		seen := watch()
		stored := in.stop()
		if err != nil {
			b.Fatalf("the sweep: %v after %d", err, pruned)
		}
		elapsed := sweepEnd.Sub(sweepStart)

		before, beside := in.latencies(warm, sweepStart), in.latencies(sweepStart, sweepEnd)
		if len(before) == 0 || len(beside) == 0 {
			b.Fatalf("intake answered %d intents alone and %d beside the sweep", len(before), len(beside))
		}
		b.ReportMetric(float64(pruned)/elapsed.Seconds(), "pruned/s")
		b.ReportMetric(elapsed.Seconds(), "sweep_s")
		b.ReportMetric(float64(len(timed.txs)), "batches")
		b.ReportMetric(ms(slices.Max(timed.txs)), "batch_max_ms")
		b.ReportMetric(ms(pct(timed.txs, 50)), "batch_p50_ms")
		for _, s := range []string{"select", "tombstones", "delete"} {
			b.ReportMetric(ms(slices.Max(timed.statements[s])), s+"_max_ms")
		}
		b.ReportMetric(ms(pct(before, 50)), "alone_p50_ms")
		b.ReportMetric(ms(pct(before, 99)), "alone_p99_ms")
		b.ReportMetric(ms(pct(beside, 50)), "beside_p50_ms")
		b.ReportMetric(ms(pct(beside, 99)), "beside_p99_ms")
		b.ReportMetric(ms(slices.Max(beside)), "beside_max_ms")
		b.ReportMetric(ms(seen.lockWait), "lock_wait_ms")
		b.ReportMetric(ms(seen.longestLockWait), "lock_wait_max_ms")
		b.Logf("pruned %d in %s (%d batches); intake %d alone, %d beside the sweep", pruned, elapsed.Round(time.Millisecond),
			len(timed.txs), len(before), len(beside))
		b.Logf("sessions seen during the sweep, by wait: %v", seen.seen)
		logScans(b, db)
		busiest := slices.SortedFunc(maps.Keys(seen.statements), func(x, y string) int { return seen.statements[y] - seen.statements[x] })
		for _, st := range busiest[:min(6, len(busiest))] {
			b.Logf("seen %5d times: %s", seen.statements[st], st)
		}

		if pruned != rows {
			b.Errorf("pruned %d requests, seeded %d settled", pruned, rows)
		}
		checkPruned(b, db, rows, outcomes, events, stored)
	}
}

// logBatchPlans logs where one batch's statements spend their time: the
// read of the settled requests and the delete, each under EXPLAIN ANALYZE
// as the driver sends it, in a transaction rolled back.
func logBatchPlans(b *testing.B, db *postgres.Driver) {
	b.Helper()
	ctx := context.Background()
	queries := namedsql.MustLoad(os.DirFS("../../store/postgres"), "queries.sql")
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback(ctx)
	before := time.Now().Add(-retentionWindow)
	var ids []string
	for _, statement := range []struct {
		name string
		args []any
	}{
		{"settled_requests", []any{before, store.DefaultPruneBatch, []string{"rejected", "expired", "cancelled"}, "approved", []string{"succeeded", "failed"}}},
		{"delete_requests", nil},
	} {
		if statement.name == "delete_requests" {
			if err := tx.QueryRow(ctx, `SELECT array_agg(id::text) FROM (SELECT id FROM requests WHERE status <> 'pending' ORDER BY updated_at LIMIT $1) r`,
				store.DefaultPruneBatch).Scan(&ids); err != nil {
				b.Fatal(err)
			}
			statement.args = []any{ids}
		}
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+queries.Get(statement.name), statement.args...)
		if err != nil {
			b.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s:\n%s", statement.name, strings.Join(lines, "\n"))
	}
}

// logScans logs the tables read whole since the seeding, and how often:
// a plan that scans a growing table shows here.
func logScans(b *testing.B, db *postgres.Driver) {
	b.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT relname || ': ' || seq_scan || ' scans, ' || seq_tup_read || ' rows'
		FROM pg_stat_user_tables WHERE seq_tup_read > 0 ORDER BY seq_tup_read DESC LIMIT 5`)
	if err != nil {
		b.Fatal(err)
	}
	scans, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("tables read whole: %s", strings.Join(scans, "; "))
}

// settledOutcomes counts the seeded requests by the outcome a tombstone
// records: the status, or an approval's execution state.
func settledOutcomes(b *testing.B, db *postgres.Driver) map[string]int {
	b.Helper()
	out := map[string]int{}
	rows, err := db.Pool.Query(context.Background(), `SELECT coalesce(e.state, r.status), count(*)
		FROM requests r LEFT JOIN executions e ON e.request_id = r.id GROUP BY 1`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var outcome string
		var n int
		if err := rows.Scan(&outcome, &n); err != nil {
			b.Fatal(err)
		}
		out[outcome] = n
	}
	if rows.Err() != nil {
		b.Fatal(rows.Err())
	}
	return out
}

// checkPruned checks what the sweep left: a tombstone for every seeded key
// with the outcome it had, no request row or row hanging on one but
// intake's (a request, its card post and its event each), every event still
// there, and every intent intake was told is stored.
func checkPruned(b *testing.B, db *postgres.Driver, seeded int, outcomes map[string]int, events int, stored []string) {
	b.Helper()
	if got := count(b, db, `SELECT count(*) FROM generate_series(1, $1) AS i
		WHERE NOT EXISTS (SELECT 1 FROM tombstones t WHERE t.key = 'wa_' || encode(sha256(convert_to('list' || i, 'UTF8')), 'hex'))`,
		seeded); got != 0 {
		b.Errorf("%d seeded keys have no tombstone", got)
	}
	tombstones := map[string]int{}
	rows, err := db.Pool.Query(context.Background(), `SELECT status, count(*) FROM tombstones GROUP BY 1`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			b.Fatal(err)
		}
		tombstones[status] = n
	}
	if rows.Err() != nil {
		b.Fatal(rows.Err())
	}
	for outcome, n := range outcomes {
		if tombstones[outcome] != n {
			b.Errorf("%d tombstones say %s, %d were seeded so (all: %v)", tombstones[outcome], outcome, n, tombstones)
		}
	}
	intake := len(stored)
	for table, want := range map[string]int{
		"requests WHERE run_id = 'retention' AND status = 'pending'": intake,
		"requests":                        intake,
		"decisions":                       0,
		"votes":                           0,
		"executions":                      0,
		"cards":                           0,
		"callbacks":                       0,
		"outbox WHERE kind = 'post_card'": intake,
		"outbox":                          intake,
		"events":                          events + intake,
		"events WHERE kind = 'requested' AND actor = 'agent:bench'": intake,
	} {
		if got := count(b, db, "SELECT count(*) FROM "+table); got != want {
			b.Errorf("%d rows in %s, want %d", got, table, want)
		}
	}
	if got := count(b, db, `SELECT count(*) FROM requests WHERE id = ANY($1::uuid[])`, stored); got != intake {
		b.Errorf("%d of the %d requests intake stored are there", got, intake)
	}
}

func count(b *testing.B, db *postgres.Driver, sql string, args ...any) int {
	b.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		b.Fatalf("%s: %v", sql, err)
	}
	return n
}

// intake submits new intents from retentionClients clients, one every
// retentionPace each, and keeps when each was sent and how long it took.
type intake struct {
	stopped chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	sent    []sample
	ids     []string
}

type sample struct {
	at   time.Time
	took time.Duration
}

func startIntake(ctx context.Context, b *testing.B, svc *approvals.Service) *intake {
	in := &intake{stopped: make(chan struct{})}
	var step atomic.Int64
	for range retentionClients {
		in.wg.Go(func() {
			tick := time.NewTicker(retentionPace)
			defer tick.Stop()
			for {
				select {
				case <-in.stopped:
					return
				case <-tick.C:
				}
				t0 := time.Now()
				req, created, err := svc.Submit(ctx, "bench", benchIntent("retention", step.Add(1)))
				took := time.Since(t0)
				if err != nil || !created {
					b.Errorf("Submit = %v, created %v", err, created)
					return
				}
				in.mu.Lock()
				in.sent = append(in.sent, sample{at: t0, took: took})
				in.ids = append(in.ids, req.ID)
				in.mu.Unlock()
			}
		})
	}
	return in
}

// stop ends intake, each client after its answer in flight, and returns
// the ids of the requests it was told are stored.
func (in *intake) stop() []string {
	close(in.stopped)
	in.wg.Wait()
	return in.ids
}

// latencies returns, sorted, how long the intents sent in [from, to) took.
func (in *intake) latencies(from, to time.Time) []time.Duration {
	var out []time.Duration
	for _, s := range in.sent {
		if !s.at.Before(from) && s.at.Before(to) {
			out = append(out, s.took)
		}
	}
	slices.Sort(out)
	return out
}

// waitUntil returns at t: the benchmark's phases are lengths of time.
func waitUntil(t time.Time) { time.Sleep(time.Until(t)) }

// sessions is what watchSessions saw: the time sessions spent waiting on
// a heavyweight lock (a row, a transaction, a table), summed over
// sessions, and the longest one wait; and how often a session of intake or
// of the sweep was seen in each wait ("CPU" when running), the profile of
// where their time went.
type sessions struct {
	lockWait, longestLockWait time.Duration
	seen                      map[string]int
	// statements counts the statements seen running, by their start.
	statements map[string]int
}

// watchSessions samples the database's active sessions every 5 ms until
// the returned function is called, and returns what it saw.
func watchSessions(ctx context.Context, b *testing.B, db *postgres.Driver) func() sessions {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan sessions)
	go func() {
		w := sessions{seen: map[string]int{}, statements: map[string]int{}}
		// Since when each session waiting on a lock (pid and its
		// statement's start) has been seen waiting.
		first := map[[2]int64]time.Time{}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				done <- w
				return
			case <-tick.C:
			}
			now := time.Now()
			rows, err := db.Pool.Query(ctx, `SELECT pid, (extract(epoch FROM query_start) * 1e6)::bigint,
				CASE application_name WHEN 'retention' THEN 'sweep' ELSE 'intake' END,
				coalesce(wait_event_type || ':' || wait_event, 'CPU'), left(regexp_replace(query, '\s+', ' ', 'g'), 100)
				FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()`)
			if err != nil {
				if ctx.Err() == nil {
					b.Errorf("watching sessions: %v", err)
				}
				done <- w
				return
			}
			for rows.Next() {
				var k [2]int64
				var who, wait, query string
				if err := rows.Scan(&k[0], &k[1], &who, &wait, &query); err != nil {
					b.Errorf("watching sessions: %v", err)
				}
				w.seen[who+" "+wait]++
				w.statements[who+" "+query]++
				if !strings.HasPrefix(wait, "Lock:") {
					continue
				}
				w.lockWait += now.Sub(last)
				if _, ok := first[k]; !ok {
					first[k] = last
				}
				w.longestLockWait = max(w.longestLockWait, now.Sub(first[k]))
			}
			rows.Close()
			last = now
		}
	}()
	return func() sessions {
		cancel()
		return <-done
	}
}

// timedDriver times the prune's transactions and its statements.
type timedDriver struct {
	store.Driver
	mu         sync.Mutex
	txs        []time.Duration
	statements map[string][]time.Duration
}

func (d *timedDriver) InTx(ctx context.Context, durable bool, fn func(store.Executor) error) error {
	t0 := time.Now()
	err := d.Driver.InTx(ctx, durable, func(ex store.Executor) error { return fn(timedExecutor{ex, d}) })
	d.record("", time.Since(t0))
	return err
}

func (d *timedDriver) record(statement string, took time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if statement == "" {
		d.txs = append(d.txs, took)
		return
	}
	if d.statements == nil {
		d.statements = map[string][]time.Duration{}
	}
	d.statements[statement] = append(d.statements[statement], took)
}

type timedExecutor struct {
	store.Executor
	d *timedDriver
}

func (e timedExecutor) SettledRequests(ctx context.Context, p store.SettledParams) ([]store.Prunable, error) {
	t0 := time.Now()
	defer func() { e.d.record("select", time.Since(t0)) }()
	return e.Executor.SettledRequests(ctx, p)
}

func (e timedExecutor) InsertTombstones(ctx context.Context, ts []store.Tombstone) error {
	t0 := time.Now()
	defer func() { e.d.record("tombstones", time.Since(t0)) }()
	return e.Executor.InsertTombstones(ctx, ts)
}

func (e timedExecutor) DeleteRequests(ctx context.Context, ids []string) error {
	t0 := time.Now()
	defer func() { e.d.record("delete", time.Since(t0)) }()
	return e.Executor.DeleteRequests(ctx, ids)
}

func pct(sorted []time.Duration, p int) time.Duration {
	sorted = slices.Sorted(slices.Values(sorted))
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(i, len(sorted))-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
