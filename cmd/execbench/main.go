// Command execbench measures countersign's executor the way the River
// baseline measures a River queue: approved executions burned down to
// succeeded against a no-op provider on loopback (throughput), then single
// approvals one at a time (approval-to-dispatch latency).
//
//	go run ./cmd/execbench -database-url postgres://postgres@127.0.0.1:5432/postgres -executions 20000
//
// It creates a scratch database next to the one named (the events table is
// append-only, so a used one cannot be emptied), migrates it, and drops it at
// the end.
package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/sandbox"
	"github.com/countersign/countersign/store"
)

const tool = "billing.credit"

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run is main with its deferred clean-up (the scratch database) kept on
// errors; the smoke test calls it with tiny sizes.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("execbench", flag.ContinueOnError)
	dbURL := flags.String("database-url", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL server; a scratch database is created beside this one")
	n := flags.Int("executions", 20000, "approved executions to burn down")
	trickle := flags.Int("trickle", 200, "single approvals, one at a time, to measure approval-to-dispatch latency")
	batch := flags.Int("batch", 500, "executor claim batch size")
	conc := flags.Int("concurrency", 100, "sends in flight per dispatch loop")
	lanes := flags.Int("lanes", 2, "dispatch loops")
	cpuprofile := flags.String("cpuprofile", "", "write a CPU profile of the burn-down to this file")
	if err := flags.Parse(args); err != nil {
		return err
	}

	scratch, drop, err := scratchDatabase(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer drop()
	db, err := store.Open(ctx, scratch)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Migrate(ctx, nil); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: sandbox.Noop(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Minute}
	go srv.Serve(ln)
	defer srv.Close()

	if err := seed(ctx, db, *n); err != nil {
		return err
	}

	var (
		mu      sync.Mutex
		waiting = map[string]chan time.Time{}
	)
	metrics := executor.NewMetrics(nil)
	ex := executor.New(executor.Config{
		DB: db,
		Tools: map[string]executor.Tool{tool: {
			URL: "http://" + ln.Addr().String() + "/", Timeout: 10 * time.Second, KeyAware: true,
			MaxAttempts: 5, ClaimTimeout: time.Minute, ApprovalTTL: 24 * time.Hour,
		}},
		Secret: []byte("bench"), BatchSize: *batch, Concurrency: *conc, Lanes: *lanes,
		Metrics: metrics,
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		OnSend: func(c store.Claim, at time.Time) {
			mu.Lock()
			ch := waiting[c.Key]
			mu.Unlock()
			if ch != nil {
				ch <- at
			}
		},
	})
	succeeded := func() int { return int(testutil.ToFloat64(metrics.Executions.WithLabelValues("succeeded", "none"))) }

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	listener := store.NewListener(db, slog.New(slog.DiscardHandler))
	go listener.Run(runCtx)
	wake, unsubscribe := listener.SubscribeReady()
	defer unsubscribe()
	kick := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-runCtx.Done():
				return
			case <-wake:
			}
			select {
			case kick <- struct{}{}:
			default:
			}
		}
	}()

	// Burn-down: everything is approved before the executor starts, as the
	// River baseline inserts everything before its client starts.
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	start := time.Now()
	go ex.Run(runCtx, kick, time.Second)
	go func() { // as serve's reconcile cron does at its default schedule
		tick := time.NewTicker(15 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
			if rep, err := ex.ReconcileOnce(runCtx); err == nil && rep.Settled > 0 {
				log.Printf("reconciled %d executions", rep.Settled)
			}
		}
	}()
	kick <- struct{}{}
	for succeeded() < *n {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	pprof.StopCPUProfile()
	var detours int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM executions WHERE attempts > 1`).Scan(&detours); err != nil {
		return err
	}

	// Trickle: approve one request at a time through the review service and
	// wait for its dispatch.
	review := must(approvals.New(approvals.Config{DB: db, Tools: map[string]approvals.Tool{tool: {Name: tool, Approvers: []string{"U0BENCH"}}},
		Logger: slog.New(slog.DiscardHandler)}))
	time.Sleep(100 * time.Millisecond) // let the LISTEN connection settle after the burst
	var fromApproval, fromCall []time.Duration
	for i := range *trickle {
		req, _, err := review.Submit(ctx, "bench", approvals.Intent{
			RunID: "trickle", Step: json.RawMessage(fmt.Sprint(i)), Tool: tool,
			Effect: json.RawMessage(`{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}`),
		})
		if err != nil {
			return err
		}
		ch := make(chan time.Time, 1)
		mu.Lock()
		waiting[req.Key] = ch
		mu.Unlock()
		before := succeeded()
		called := time.Now()
		out, err := review.Decide(ctx, approvals.Decision{RequestID: req.ID, Round: 1, PayloadHash: req.PayloadHash,
			Verdict: store.VerdictApprove, DecidedBy: "U0BENCH", Via: "bench"})
		if err != nil {
			return err
		}
		select {
		case at := <-ch:
			fromApproval = append(fromApproval, at.Sub(out.Decision.DecidedAt))
			fromCall = append(fromCall, at.Sub(called))
		case <-time.After(5 * time.Second):
			log.Printf("approval %d not dispatched within 5s", i)
		}
		for succeeded() <= before {
			time.Sleep(100 * time.Microsecond)
		}
	}

	fmt.Fprintf(stdout, "countersign burn-down: %d executions in %s = %.0f executions/s (batch %d, %d sends in flight, %d lanes)\n",
		*n, elapsed.Round(time.Millisecond), float64(*n)/elapsed.Seconds(), *batch, *conc, *lanes)
	fmt.Fprintf(stdout, "  (%d of them needed more than one attempt)\n", detours)
	fmt.Fprintf(stdout, "countersign approval-to-dispatch latency over %d single approvals: p50 %s p99 %s\n",
		len(fromApproval), pct(fromApproval, .50), pct(fromApproval, .99))
	fmt.Fprintf(stdout, "  (from the call to Decide, including its reads: p50 %s p99 %s)\n", pct(fromCall, .50), pct(fromCall, .99))
	return nil
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))].Round(10 * time.Microsecond)
}

// seed inserts n requests approved a moment ago, with their decisions and
// ready executions, in three set-based statements.
func seed(ctx context.Context, db *store.DB, n int) error {
	effect := `{"amount_cents":4200,"currency":"USD","invoice":"inv_8841"}`
	hash := "sha256:" + sha256Hex([]byte(effect))
	strs, err := store.EffectStrings([]byte(effect))
	if err != nil {
		return err
	}
	return db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
INSERT INTO requests (key, basis_hash, run_id, step, tool, effect_strings, snapshot, payload_hash, requested_by, status, expires_at)
SELECT 'wa_bench_' || g, 'b', 'bench', to_jsonb(g), $2, $3, convert_to($4::text, 'UTF8'), $5, 'bench', 'approved', now() + interval '1 day'
FROM generate_series(1, $1) g`, n, tool, strs, effect, hash); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
INSERT INTO decisions (request_id, round, verdict, decided_by, via, payload_hash_seen)
SELECT id, 1, 'approve', 'U0BENCH', 'bench', payload_hash FROM requests`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
INSERT INTO executions (request_id, decision_id, key, tool, snapshot, snapshot_hash, max_attempts, approved_at)
SELECT r.id, d.id, r.key, r.tool, r.snapshot, r.payload_hash, 5, now() FROM requests r JOIN decisions d ON d.request_id = r.id`)
		return err
	})
}

// scratchDatabase creates an empty database on the server of rawURL and
// returns its URL and a function that drops it.
func scratchDatabase(ctx context.Context, rawURL string) (string, func(), error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", nil, fmt.Errorf("parsing -database-url: %w", err)
	}
	admin, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return "", nil, err
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "execbench_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close(ctx)
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		admin.Close(context.Background())
	}, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
