// Command riverexec is the executor a Go team would build instead of
// countersign's: a River job queue whose worker POSTs each approved payload
// to the provider with an Idempotency-Key header. It measures burn-down
// throughput (jobs inserted first, then the client started and timed until
// every job completed) and enqueue-to-work latency for single jobs inserted
// one at a time. Run it against the same PostgreSQL and the same kind of
// provider as countersign's executor benchmark, in the same session, and
// compare the two as ratios (execbench -peer does).
//
//	go run ./riverexec -database-url postgres://postgres@127.0.0.1:5432/riverbench -jobs 20000
//
// With no -provider-url it starts its own no-op provider on loopback, which
// answers 200 {"id": ...} and remembers nothing. The database should be a
// scratch one: River's tables are created and truncated.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// DispatchArgs is an approved write waiting to be sent.
type DispatchArgs struct {
	// RequestID names the peer's request row in -ledger mode; 0 otherwise.
	RequestID int64           `json:"request_id,omitempty"`
	Key       string          `json:"key"`
	Effect    json.RawMessage `json:"effect"`
	// Enqueued is when the job became claimable; it gives enqueue-to-work latency.
	Enqueued time.Time `json:"enqueued"`
}

// Kind is River's name for the job type.
func (DispatchArgs) Kind() string { return "dispatch" }

// DispatchWorker POSTs a job's effect to the provider.
type DispatchWorker struct {
	river.WorkerDefaults[DispatchArgs]
	client    *http.Client
	url       string
	latencies chan time.Duration
	// pool is set in -ledger mode: the worker then records each transition.
	pool *pgxpool.Pool
}

// Work sends one job and records how long it waited.
func (w *DispatchWorker) Work(ctx context.Context, job *river.Job[DispatchArgs]) error {
	start := time.Now()
	if w.pool != nil {
		if err := recordClaim(ctx, w.pool, job); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(job.Args.Effect))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", job.Args.Key)
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("provider answered %d", resp.StatusCode)
	}
	if w.pool != nil {
		if err := recordOutcome(ctx, w.pool, job); err != nil {
			return err
		}
	}
	select {
	case w.latencies <- start.Sub(job.Args.Enqueued):
	default:
	}
	return nil
}

// Result is what one run measured; -json prints it for execbench.
type Result struct {
	Mode        string  `json:"mode"` // river, or river+ledger
	Jobs        int     `json:"jobs"`
	Failed      int     `json:"failed"`
	Workers     int     `json:"workers"`
	Seconds     float64 `json:"seconds"`
	JobsPerSec  float64 `json:"jobs_per_s"`
	Singles     int     `json:"singles"`
	LatencyP50  float64 `json:"latency_p50_ms"`
	LatencyP99  float64 `json:"latency_p99_ms"`
	LatencyMax  float64 `json:"latency_max_ms"`
	LatencyNote string  `json:"latency_note"`
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("riverexec", flag.ContinueOnError)
	dbURL := flags.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (a scratch database: River's tables are created and truncated)")
	jobs := flags.Int("jobs", 20000, "jobs to burn down")
	workers := flags.Int("workers", 100, "River MaxWorkers")
	providerURL := flags.String("provider-url", "", "provider to POST to; empty starts a no-op one on loopback")
	trickle := flags.Int("trickle", 200, "jobs inserted one at a time, after the burn-down, to measure enqueue-to-work latency")
	asJSON := flags.Bool("json", false, "print the result as one JSON object")
	ledger := flags.Bool("ledger", false, "keep countersign's records too: a request row, an audit event and a card update per transition, the outcome completed in the same transaction (JobCompleteTx)")
	if err := flags.Parse(args); err != nil {
		return err
	}

	pool, err := pgxpool.New(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrating River's tables: %w", err)
	}
	if _, err := pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
		return err
	}
	if *ledger {
		if _, err := pool.Exec(ctx, ledgerSchema); err != nil {
			return fmt.Errorf("creating the ledger's tables: %w", err)
		}
	}

	url := *providerURL
	if url == "" {
		var stop func()
		url, stop, err = noopProvider()
		if err != nil {
			return err
		}
		defer stop()
	}
	worker := &DispatchWorker{
		client:    &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *workers}},
		url:       url,
		latencies: make(chan time.Duration, *trickle+16),
	}
	if *ledger {
		worker.pool = pool
	}
	ws := river.NewWorkers()
	river.AddWorker(ws, worker)
	client, err := river.NewClient(driver, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: *workers}},
		Workers:           ws,
		FetchCooldown:     2 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		Logger:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return err
	}
	completed, cancel := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: *jobs + *trickle + 1000,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed},
	})
	defer cancel()

	// Burn-down: insert everything first (as River's own benchmark does), then time the work.
	effect := json.RawMessage(`{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}`)
	params := make([]river.InsertManyParams, 0, 5000)
	var ids []int64
	if *ledger {
		if ids, err = insertRequests(ctx, pool, "wa_bench_", *jobs); err != nil {
			return fmt.Errorf("inserting the ledger's requests: %w", err)
		}
	}
	for i := range *jobs {
		args := DispatchArgs{Key: fmt.Sprintf("wa_bench_%d", i), Effect: effect, Enqueued: time.Now()}
		if *ledger {
			args.RequestID = ids[i]
		}
		params = append(params, river.InsertManyParams{Args: args})
		if len(params) == cap(params) || i == *jobs-1 {
			if _, err := client.InsertManyFast(ctx, params); err != nil {
				return fmt.Errorf("inserting jobs: %w", err)
			}
			params = params[:0]
		}
	}
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer func() {
		stopCtx, stopCancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer stopCancel()
		_ = client.Stop(stopCtx)
	}()
	done, failed := 0, 0
	for done+failed < *jobs {
		ev, err := next(ctx, completed)
		if err != nil {
			return fmt.Errorf("burn-down: %d of %d jobs finished: %w", done+failed, *jobs, err)
		}
		if ev.Kind == river.EventKindJobFailed {
			failed++
		} else {
			done++
		}
	}
	elapsed := time.Since(start)
	// Latencies recorded during the burn-down measure queueing, not wake-up.
	for len(worker.latencies) > 0 {
		<-worker.latencies
	}

	// Trickle: one job at a time, waiting for each, to measure enqueue-to-work latency.
	var lat []time.Duration
	for i := range *trickle {
		args := DispatchArgs{Key: fmt.Sprintf("wa_trickle_%d", i), Effect: effect, Enqueued: time.Now()}
		if *ledger {
			err = insertApproved(ctx, pool, client, args)
		} else {
			_, err = client.Insert(ctx, args, nil)
		}
		if err != nil {
			return err
		}
		if _, err := next(ctx, completed); err != nil {
			return fmt.Errorf("single job %d: %w", i, err)
		}
		select {
		case d := <-worker.latencies:
			lat = append(lat, d)
		case <-time.After(5 * time.Second):
		}
	}

	slices.Sort(lat)
	mode := "river"
	if *ledger {
		mode = "river+ledger"
	}
	res := Result{
		Mode: mode, Jobs: *jobs, Failed: failed, Workers: *workers, Seconds: elapsed.Seconds(),
		JobsPerSec: float64(done) / elapsed.Seconds(), Singles: len(lat),
		LatencyP50: ms(pct(lat, .50)), LatencyP99: ms(pct(lat, .99)), LatencyMax: ms(pct(lat, 1)),
		LatencyNote: "from time.Now() before Insert to the start of Work",
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "%s burn-down: %d jobs (%d failed) in %s = %.0f jobs/s with %d workers\n",
		mode, *jobs, failed, elapsed.Round(time.Millisecond), res.JobsPerSec, *workers)
	fmt.Fprintf(stdout, "%s enqueue-to-work latency over %d single jobs: p50 %s p99 %s\n",
		mode, len(lat), pct(lat, .50).Round(10*time.Microsecond), pct(lat, .99).Round(10*time.Microsecond))
	return nil
}

// next waits for a job's completion or failure; a minute without one means
// the queue is stuck.
func next(ctx context.Context, events <-chan *river.Event) (*river.Event, error) {
	select {
	case ev, ok := <-events:
		if !ok {
			return nil, errors.New("River's event stream closed")
		}
		return ev, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Minute):
		return nil, errors.New("no job finished within a minute")
	}
}

func noopProvider() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	var n atomic.Int64
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"obj_%d"}`, n.Add(1))
	})}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/", func() { srv.Close() }, nil
}

// pct returns the p-th quantile of the sorted durations.
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
