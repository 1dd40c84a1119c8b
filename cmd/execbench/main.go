// Command execbench measures countersign's executor the way the River
// baseline measures a River queue: approved executions burned down to
// succeeded against a no-op provider on loopback (throughput), then single
// approvals one at a time (approval-to-dispatch latency), then as many
// intents one at a time that a policy approves at intake (intake-to-dispatch
// latency).
//
//	go run ./cmd/execbench -database-url postgres://postgres@127.0.0.1:5432/postgres -executions 20000
//
// It creates a scratch database next to the one named (the events table is
// append-only, so a used one cannot be emptied), migrates it, and drops it at
// the end.
//
// With -peer (the River executor peer in bench/peers, built) every round runs
// the peer first, on a scratch database of its own with as many jobs and
// singles, and the run ends with every round's ratios, countersign over River:
//
//	go run ./cmd/execbench -rounds 4 -peer bin/riverexec
package main

import (
	"bytes"
	"context"
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
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/cmd/internal/benchserve"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/sandbox"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
)

const tool = "billing.credit"

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run is main with its deferred clean-up (the scratch databases) kept on
// errors; the smoke test calls it with tiny sizes.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("execbench", flag.ContinueOnError)
	var o options
	flags.StringVar(&o.dbURL, "database-url", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL server; a scratch database is created beside this one")
	flags.IntVar(&o.n, "executions", 20000, "approved executions to burn down")
	flags.IntVar(&o.trickle, "trickle", 200, "single approvals, one at a time, to measure approval-to-dispatch latency")
	flags.IntVar(&o.batch, "batch", 500, "executor claim batch size")
	flags.IntVar(&o.conc, "concurrency", 100, "sends in flight per dispatch loop")
	flags.IntVar(&o.lanes, "lanes", 2, "dispatch loops")
	flags.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the burn-down to this file")
	rounds := flags.Int("rounds", 1, "rounds; each runs the peer (if any) and then countersign")
	peer := flags.String("peer", "", "binary of the River executor peer (bench/peers/riverexec), run before countersign in every round on a scratch database of its own with as many jobs and singles: bare, then keeping countersign's records (-ledger)")
	if err := flags.Parse(args); err != nil {
		return err
	}

	var rows []comparison
	for r := 1; r <= *rounds; r++ {
		var row comparison
		if *peer != "" {
			for _, ledger := range []bool{false, true} {
				res, err := runPeer(ctx, *peer, o, ledger)
				if err != nil {
					return fmt.Errorf("round %d, peer: %w", r, err)
				}
				if ledger {
					row.ledger = res
				} else {
					row.peer = res
				}
				fmt.Fprintf(stdout, "round %d: %s burn-down: %d jobs (%d failed) in %.3fs = %.0f jobs/s with %d workers\n",
					r, res.Mode, res.Jobs, res.Failed, res.Seconds, res.JobsPerSec, res.Workers)
				fmt.Fprintf(stdout, "round %d: %s enqueue-to-work latency over %d single jobs: p50 %.2fms p99 %.2fms\n",
					r, res.Mode, res.Singles, res.LatencyP50, res.LatencyP99)
			}
		}
		res, err := measure(ctx, o)
		if err != nil {
			return fmt.Errorf("round %d: %w", r, err)
		}
		row.cs = res
		rows = append(rows, row)
		prefix := ""
		if *rounds > 1 || *peer != "" {
			prefix = fmt.Sprintf("round %d: ", r)
		}
		fmt.Fprintf(stdout, "%scountersign burn-down: %d executions in %s = %.0f executions/s (batch %d, %d sends in flight, %d lanes)\n",
			prefix, o.n, res.elapsed.Round(time.Millisecond), res.rate(), o.batch, o.conc, o.lanes)
		fmt.Fprintf(stdout, "%s  (%d of them needed more than one attempt)\n", prefix, res.detours)
		fmt.Fprintf(stdout, "%s  database per execution: %.0fµs of PostgreSQL CPU; rows written: %s\n",
			prefix, float64(res.dbCPU.Microseconds())/float64(o.n), res.writes.per(o.n))
		fmt.Fprintf(stdout, "%scountersign approval-to-dispatch latency over %d single approvals: p50 %s p99 %s\n",
			prefix, len(res.fromApproval), benchserve.Pct(res.fromApproval, .50), benchserve.Pct(res.fromApproval, .99))
		fmt.Fprintf(stdout, "%s  (from the call to Decide, including its reads: p50 %s p99 %s; from its return, the approval committed: p50 %s p99 %s)\n", prefix,
			benchserve.Pct(res.fromCall, .50), benchserve.Pct(res.fromCall, .99), benchserve.Pct(res.fromCommit, .50), benchserve.Pct(res.fromCommit, .99))
		fmt.Fprintf(stdout, "%scountersign auto-approved intake-to-dispatch latency over %d single intents (a policy allows them): p50 %s p99 %s\n",
			prefix, len(res.fromIntake), benchserve.Pct(res.fromIntake, .50), benchserve.Pct(res.fromIntake, .99))
	}
	if *peer != "" {
		printComparison(stdout, rows)
	}
	return nil
}

// options are execbench's sizes and the executor's settings.
type options struct {
	dbURL, cpuprofile              string
	n, trickle, batch, conc, lanes int
}

// result is what one round measured of countersign.
type result struct {
	n                      int
	elapsed                time.Duration
	detours                int
	dbCPU                  time.Duration // PostgreSQL backends' CPU over the burn-down
	writes                 writes        // rows the burn-down wrote
	fromApproval, fromCall []time.Duration
	// fromCommit is from Decide's return (the approval committed) to the
	// send: the wake-up, the claim's commit and the request.
	fromCommit []time.Duration
	// fromIntake is an auto-approved write's, from the Submit call (a
	// policy allows it at intake) to the send.
	fromIntake []time.Duration
}

func (r result) rate() float64 { return float64(r.n) / r.elapsed.Seconds() }

// measure burns down o.n approved executions on a scratch database, then
// times o.trickle single approvals.
func measure(ctx context.Context, o options) (result, error) {
	scratch, drop, err := benchserve.ScratchDatabase(ctx, o.dbURL, "execbench")
	if err != nil {
		return result{}, err
	}
	defer drop()
	db, err := postgres.Open(ctx, scratch)
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	ledger := store.NewLedger(db, store.Options{})
	if _, err := db.Migrate(ctx, nil); err != nil {
		return result{}, err
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	srv := &http.Server{Handler: sandbox.Noop(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Minute}
	go srv.Serve(ln)
	defer srv.Close()

	if err := seed(ctx, db, o.n); err != nil {
		return result{}, err
	}

	var (
		mu      sync.Mutex
		waiting = map[string]chan time.Time{}
	)
	metrics := executor.NewMetrics(nil)
	kick := make(chan struct{}, 1)
	ex := executor.New(executor.Config{
		Wake: kick, Poll: time.Second,
		DB: ledger,
		Tools: map[string]executor.Tool{tool: {
			URL: "http://" + ln.Addr().String() + "/", Timeout: 10 * time.Second, KeyAware: true,
			MaxAttempts: 5, ClaimTimeout: time.Minute, ApprovalTTL: 24 * time.Hour,
		}},
		Secrets: [][]byte{[]byte("bench")}, BatchSize: o.batch, Concurrency: o.conc, Lanes: o.lanes,
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
	listener, listening, _ := db.Notifier(slog.New(slog.DiscardHandler))
	if err := listening.Start(runCtx); err != nil {
		return result{}, err
	}
	defer func() { _ = listening.Stop(context.Background()) }()
	wake, unsubscribe := listener.SubscribeReady()
	defer unsubscribe()
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
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return result{}, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return result{}, err
		}
	}
	writesBefore, err := countWrites(ctx, db.Pool)
	if err != nil {
		return result{}, err
	}
	dbBefore := benchserve.DatabaseCPU(ctx, db.Pool, benchserve.DatabaseName(scratch))
	start := time.Now()
	if err := ex.Start(runCtx); err != nil {
		return result{}, err
	}
	defer func() { _ = ex.Stop(context.Background()) }()
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
	err = waitFor(ctx, func() bool { return succeeded() >= o.n }, time.Millisecond, 5*time.Minute)
	elapsed := time.Since(start)
	pprof.StopCPUProfile()
	if err != nil {
		return result{}, fmt.Errorf("burn-down: %d of %d executions succeeded: %w", succeeded(), o.n, err)
	}
	dbCPU := benchserve.DatabaseCPU(ctx, db.Pool, benchserve.DatabaseName(scratch)) - dbBefore
	writesAfter, err := countWrites(ctx, db.Pool)
	if err != nil {
		return result{}, err
	}
	var detours int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM executions WHERE attempts > 1`).Scan(&detours); err != nil {
		return result{}, err
	}

	// Trickle: approve one request at a time through the review service and
	// wait for its dispatch.
	review := must(approvals.New(approvals.Config{DB: ledger, Tools: map[string]approvals.Tool{tool: {Name: tool, Approvers: []string{"U0BENCH"}}},
		Logger: slog.New(slog.DiscardHandler)}))
	time.Sleep(100 * time.Millisecond) // let the LISTEN connection settle after the burst
	var fromApproval, fromCall, fromCommit []time.Duration
	for i := range o.trickle {
		req, _, err := review.Submit(ctx, "bench", approvals.Intent{
			RunID: "trickle", Step: json.RawMessage(fmt.Sprint(i)), Tool: tool,
			Effect: json.RawMessage(`{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}`),
		})
		if err != nil {
			return result{}, err
		}
		ch := make(chan time.Time, 1)
		mu.Lock()
		waiting[req.Key] = ch
		mu.Unlock()
		before := succeeded()
		called := time.Now()
		out, err := review.Decide(ctx, approvals.Decision{RequestID: req.ID, Round: 1, PayloadHash: req.PayloadHash,
			Verdict: store.VerdictApprove, DecidedBy: "U0BENCH", Via: "bench"})
		committed := time.Now()
		if err != nil {
			return result{}, err
		}
		select {
		case at := <-ch:
			fromApproval = append(fromApproval, at.Sub(out.Decision.DecidedAt))
			fromCall = append(fromCall, at.Sub(called))
			fromCommit = append(fromCommit, at.Sub(committed))
		case <-time.After(5 * time.Second):
			log.Printf("approval %d not dispatched within 5s", i)
		}
		if err := waitFor(ctx, func() bool { return succeeded() > before }, 100*time.Microsecond, time.Minute); err != nil {
			return result{}, fmt.Errorf("single approval %d did not succeed: %w", i, err)
		}
	}

	fromIntake, err := autoApproved(ctx, ledger, o.trickle, func(key string) chan time.Time {
		ch := make(chan time.Time, 1)
		mu.Lock()
		waiting[key] = ch
		mu.Unlock()
		return ch
	})
	if err != nil {
		return result{}, err
	}

	return result{n: o.n, elapsed: elapsed, detours: detours, dbCPU: dbCPU, writes: writesAfter.minus(writesBefore),
		fromApproval: fromApproval, fromCall: fromCall, fromCommit: fromCommit, fromIntake: fromIntake}, nil
}

// autoApproved submits n intents one at a time to a tool whose policy
// allows every write, so no reviewer is asked, and times each from the
// Submit call to its send (sent answers the channel the send reports to).
func autoApproved(ctx context.Context, ledger *store.Ledger, n int, sent func(key string) chan time.Time) ([]time.Duration, error) {
	always, err := approvals.CompileExpression(`true`)
	if err != nil {
		return nil, err
	}
	review, err := approvals.New(approvals.Config{DB: ledger, Logger: slog.New(slog.DiscardHandler),
		Tools: map[string]approvals.Tool{tool: {Name: tool, Approvers: []string{"U0BENCH"},
			Tiers: []approvals.Tier{{Name: "auto", When: always, Verdict: approvals.VerdictAllow}}}}})
	if err != nil {
		return nil, err
	}
	var took []time.Duration
	for i := range n {
		intent := approvals.Intent{
			RunID: "auto", Step: json.RawMessage(fmt.Sprint(i)), Tool: tool,
			Effect: json.RawMessage(`{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}`),
		}
		key, err := approvals.Key(intent.Basis())
		if err != nil {
			return nil, err
		}
		ch := sent(key)
		called := time.Now()
		req, _, err := review.Submit(ctx, "bench", intent)
		if err != nil {
			return nil, err
		}
		if req.Key != key || req.Status != store.RequestApproved {
			return nil, fmt.Errorf("auto-approved intent %d: key %s, status %s", i, req.Key, req.Status)
		}
		select {
		case at := <-ch:
			took = append(took, at.Sub(called))
		case <-time.After(5 * time.Second):
			return nil, fmt.Errorf("auto-approved intent %d not dispatched within 5s", i)
		}
	}
	return took, nil
}

// waitFor polls done every interval until it is true or timeout passes (a
// burn-down takes seconds: far longer means something broke).
func waitFor(ctx context.Context, done func() bool, interval, timeout time.Duration) error {
	for deadline := time.Now().Add(timeout); !done(); {
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
	return nil
}

// seed inserts n requests approved a moment ago, with their decisions and
// ready executions, in three set-based statements.
func seed(ctx context.Context, db *postgres.Driver, n int) error {
	effect := `{"amount_cents":4200,"currency":"USD","invoice":"inv_8841"}`
	hash := "sha256:" + sha256Hex([]byte(effect))
	strs, err := store.EffectStrings([]byte(effect))
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
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
INSERT INTO executions (request_id, decision_id, key, tool, snapshot, snapshot_hash, max_attempts, approved_at, requested_by, request_created_at)
SELECT r.id, d.id, r.key, r.tool, r.snapshot, r.payload_hash, 5, now(), r.requested_by, r.created_at FROM requests r JOIN decisions d ON d.request_id = r.id`)
		return err
	})
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// peerResult is what the River executor peer prints with -json.
type peerResult struct {
	Mode       string  `json:"mode"` // river, or river+ledger
	Jobs       int     `json:"jobs"`
	Failed     int     `json:"failed"`
	Workers    int     `json:"workers"`
	Seconds    float64 `json:"seconds"`
	JobsPerSec float64 `json:"jobs_per_s"`
	Singles    int     `json:"singles"`
	LatencyP50 float64 `json:"latency_p50_ms"`
	LatencyP99 float64 `json:"latency_p99_ms"`
}

// comparison is one round: the peer bare and keeping countersign's records,
// then countersign.
type comparison struct {
	peer, ledger peerResult
	cs           result
}

// runPeer runs the peer binary on a scratch database of its own with the
// same number of jobs and singles as countersign's executions and approvals.
func runPeer(ctx context.Context, bin string, o options, ledger bool) (peerResult, error) {
	scratch, drop, err := benchserve.ScratchDatabase(ctx, o.dbURL, "execbench")
	if err != nil {
		return peerResult{}, err
	}
	defer drop()
	var stdout, stderr bytes.Buffer
	args := []string{"-database-url", scratch, "-jobs", fmt.Sprint(o.n), "-trickle", fmt.Sprint(o.trickle), "-json"}
	if ledger {
		args = append(args, "-ledger")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return peerResult{}, fmt.Errorf("%s: %w\n%s", bin, err, stderr.String())
	}
	var res peerResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return peerResult{}, fmt.Errorf("reading %s's result %q: %w", bin, stdout.String(), err)
	}
	if res.Failed > 0 || res.JobsPerSec <= 0 {
		return peerResult{}, fmt.Errorf("%s: %d of %d jobs failed", bin, res.Failed, res.Jobs)
	}
	return res, nil
}

// printComparison prints every round's ratios, countersign over bare River
// and over River keeping countersign's records, and how many rounds meet the
// targets in docs/BENCHMARKS.md.
func printComparison(w io.Writer, rows []comparison) {
	fmt.Fprintf(w, "\n| round | River jobs/s | River+ledger jobs/s | countersign executions/s | vs River | vs River+ledger | River enqueue→work p50 / p99 | countersign approval→dispatch p50 / p99 | p99 ratio | auto-approved intake→dispatch p50 / p99 | p99 ratio |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	var ratios, ledgerRatios, p99Ratios, autoRatios []float64
	throughputMet, ledgerMet, latencyMet, autoMet := 0, 0, 0, 0
	for i, r := range rows {
		ratio := r.cs.rate() / r.peer.JobsPerSec
		ledgerRatio := r.cs.rate() / r.ledger.JobsPerSec
		p99 := ms(benchserve.Pct(r.cs.fromApproval, .99))
		p99Ratio := p99 / r.peer.LatencyP99
		ratios, ledgerRatios, p99Ratios = append(ratios, ratio), append(ledgerRatios, ledgerRatio), append(p99Ratios, p99Ratio)
		if ratio >= 1.0 {
			throughputMet++
		}
		if ledgerRatio >= 4.0 {
			ledgerMet++
		}
		if p99 <= r.peer.LatencyP99 {
			latencyMet++
		}
		autoP99 := ms(benchserve.Pct(r.cs.fromIntake, .99))
		autoRatios = append(autoRatios, autoP99/r.peer.LatencyP99)
		if autoP99 <= r.peer.LatencyP99 {
			autoMet++
		}
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %.0f | **%.2f** | **%.2f** | %.2f / %.2f ms | %.2f / %.2f ms | **%.2f** | %.2f / %.2f ms | **%.2f** |\n",
			i+1, r.peer.JobsPerSec, r.ledger.JobsPerSec, r.cs.rate(), ratio, ledgerRatio, r.peer.LatencyP50, r.peer.LatencyP99,
			ms(benchserve.Pct(r.cs.fromApproval, .50)), p99, p99Ratio, ms(benchserve.Pct(r.cs.fromIntake, .50)), autoP99, autoP99/r.peer.LatencyP99)
	}
	fmt.Fprintf(w, "\nburn-down ratio (countersign / River): min %.2f, median %.2f; ≥ 1.0 in %d of %d rounds\n",
		slices.Min(ratios), median(ratios), throughputMet, len(rows))
	fmt.Fprintf(w, "burn-down ratio (countersign / River+ledger): min %.2f, median %.2f; ≥ 4 in %d of %d rounds\n",
		slices.Min(ledgerRatios), median(ledgerRatios), ledgerMet, len(rows))
	fmt.Fprintf(w, "approval→dispatch p99 / River enqueue→work p99: max %.2f, median %.2f; ≤ 1 in %d of %d rounds\n",
		slices.Max(p99Ratios), median(p99Ratios), latencyMet, len(rows))
	fmt.Fprintf(w, "auto-approved intake→dispatch p99 / River enqueue→work p99: max %.2f, median %.2f; ≤ 1 in %d of %d rounds\n",
		slices.Max(autoRatios), median(autoRatios), autoMet, len(rows))
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
