// Command intakebench measures the agent hook over real HTTP on loopback
// against a local PostgreSQL, beside the raw commit rate of one-row
// INSERT … ON CONFLICT DO NOTHING transactions at the same client counts, in
// the same run. It builds and starts a real `countersign serve` process and
// reports its peak resident memory.
//
//	go run ./cmd/intakebench -clients 8,32 -rounds 5 -duration 2s
//
// With -peer it also starts a peer hook (a binary taking -database-url,
// -listen and -token that speaks countersign's request shape, such as the
// River hook in bench/peers) on a scratch database of its own and drives it
// with the same load, its phases interleaved with countersign's, and prints
// countersign's rates as ratios to the peer's.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const token = "bench-agent-token"

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// server is a hook under load: countersign or the peer.
type server struct {
	name     string
	addr     string
	pid      int
	database string // its scratch database, whose backends' CPU is counted
}

// figures are one server's results at one client count, over all rounds.
type figures struct {
	created, replays  float64 // req/s, averaged over rounds
	newLat, replayLat []time.Duration
	// CPU time the server process spent, and requests it answered, per
	// phase kind: CPU per request is what two cores shared by the driver,
	// the server and PostgreSQL run out of.
	newCPU, replayCPU     time.Duration
	newDBCPU, replayDBCPU time.Duration // PostgreSQL backends of its database
	newN, replayN         int
}

// cpuPerRequest formats a phase's server and database CPU time per request.
func cpuPerRequest(server, database time.Duration, n int) string {
	if n == 0 {
		return "n/a"
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	return fmt.Sprintf("%.0f + %.0fµs", per(server), per(database))
}

// backendsCPU sums the CPU time of the PostgreSQL backends connected to a
// database. Pools keep their connections for the whole run, so the
// difference over a phase is the database work the phase caused.
func backendsCPU(ctx context.Context, pool *pgxpool.Pool, database string) time.Duration {
	rows, err := pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $1`, database)
	if err != nil {
		return 0
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, pid := range pids {
		total += cpuTime(int(pid))
	}
	return total
}

// databaseName is the database a connection URL names.
func databaseName(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.Path, "/")
}

// run is main with its clean-up (processes, scratch databases) kept on
// errors; the smoke test calls it with tiny sizes.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("intakebench", flag.ContinueOnError)
	adminURL := flags.String("database-url", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL server (scratch databases are created on it and dropped at the end)")
	duration := flags.Duration("duration", 2*time.Second, "length of each measured phase")
	rounds := flags.Int("rounds", 5, "raw, new-intent and replay phases are interleaved this many times, so background load falls on all alike")
	clientList := flags.String("clients", "8,32", "concurrent client counts")
	peerBin := flags.String("peer", "", "binary of a peer hook to drive beside countersign (flags -database-url, -listen, -token; GET /readyz)")
	peerName := flags.String("peer-name", "River", "the peer's name in the table")
	baselineBin := flags.String("baseline", "", "a countersign binary built from an earlier commit, driven beside this tree's in the same rounds, so a change is measured against what it changes (its rows are named baseline)")
	var serverEnv []string
	flags.Func("server-env", "NAME=VALUE added to countersign's environment (repeatable), for tuning runs such as GOMAXPROCS=1", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("want NAME=VALUE, got %q", v)
		}
		serverEnv = append(serverEnv, v)
		return nil
	})
	if err := flags.Parse(args); err != nil {
		return err
	}
	var counts []int
	for _, field := range strings.Split(*clientList, ",") {
		clients, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || clients < 1 {
			return fmt.Errorf("-clients: bad count %q", field)
		}
		counts = append(counts, clients)
	}

	dir, err := os.MkdirTemp("", "intakebench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := build(ctx, dir)
	if err != nil {
		return err
	}
	dbURL, drop, err := scratchDatabase(ctx, *adminURL, "intakebench")
	if err != nil {
		return err
	}
	defer drop()
	cs, stop, err := startCountersign(ctx, bin, dir, dbURL, serverEnv)
	if err != nil {
		return err
	}
	defer stop()
	cs.database = databaseName(dbURL)
	servers := []server{cs}
	if *peerBin != "" {
		peerURL, dropPeer, err := scratchDatabase(ctx, *adminURL, "intakebench_peer")
		if err != nil {
			return err
		}
		defer dropPeer()
		peer, stopPeer, err := startPeer(ctx, *peerName, *peerBin, peerURL)
		if err != nil {
			return err
		}
		defer stopPeer()
		peer.database = databaseName(peerURL)
		servers = append(servers, peer)
	}
	if *baselineBin != "" {
		baseURL, dropBase, err := scratchDatabase(ctx, *adminURL, "intakebench_baseline")
		if err != nil {
			return err
		}
		defer dropBase()
		base, stopBase, err := startCountersign(ctx, *baselineBin, dir, baseURL, serverEnv)
		if err != nil {
			return err
		}
		defer stopBase()
		base.name, base.database = "baseline", databaseName(baseURL)
		servers = append(servers, base)
	}

	// The raw baseline gets one connection per client, as pgbench -c would.
	poolCfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	poolCfg.MaxConns = int32(max(64, slices.Max(counts)))
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS raw_intake (key text PRIMARY KEY, body bytea NOT NULL)`); err != nil {
		return err
	}

	if len(servers) == 1 {
		fmt.Fprintf(stdout, "| clients | raw INSERT tx/s | new-intent req/s | new p50 / p99 | new / raw | replay req/s | replay p50 / p99 | replay / new | server + database CPU / new, / replay | server peak RSS |\n")
		fmt.Fprintf(stdout, "|---|---|---|---|---|---|---|---|---|---|\n")
	} else {
		fmt.Fprintf(stdout, "| clients | hook | new-intent req/s | new p50 / p99 | new / %[1]s | new / raw | replay req/s | replay p50 / p99 | replay / %[1]s | replay / new | server + database CPU / new, / replay | peak RSS |\n", servers[1].name)
		fmt.Fprintf(stdout, "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	}
	for _, clients := range counts {
		var raw float64
		figs := make([]figures, len(servers))
		for range *rounds {
			rate, err := rawInserts(ctx, pool, clients, *duration)
			if err != nil {
				return fmt.Errorf("raw inserts: %w", err)
			}
			raw += rate / float64(*rounds)
			for i, s := range servers {
				before, dbBefore := cpuTime(s.pid), backendsCPU(ctx, pool, s.database)
				rate, lat, bodies, err := intake(s, clients, *duration)
				if err != nil {
					return err
				}
				figs[i].created += rate / float64(*rounds)
				figs[i].newLat = append(figs[i].newLat, lat...)
				figs[i].newCPU += cpuTime(s.pid) - before
				figs[i].newDBCPU += backendsCPU(ctx, pool, s.database) - dbBefore
				figs[i].newN += len(lat)
				before, dbBefore = cpuTime(s.pid), backendsCPU(ctx, pool, s.database)
				rate, lat, err = replay(s, clients, *duration, bodies)
				if err != nil {
					return err
				}
				figs[i].replays += rate / float64(*rounds)
				figs[i].replayLat = append(figs[i].replayLat, lat...)
				figs[i].replayCPU += cpuTime(s.pid) - before
				figs[i].replayDBCPU += backendsCPU(ctx, pool, s.database) - dbBefore
				figs[i].replayN += len(lat)
			}
		}
		if len(servers) == 1 {
			f := figs[0]
			fmt.Fprintf(stdout, "| %d | %.0f | %.0f | %s / %s | %.2f | %.0f | %s / %s | %.2f | %s, %s | %s |\n",
				clients, raw, f.created, pct(f.newLat, .50), pct(f.newLat, .99), f.created/raw,
				f.replays, pct(f.replayLat, .50), pct(f.replayLat, .99), f.replays/f.created,
				cpuPerRequest(f.newCPU, f.newDBCPU, f.newN), cpuPerRequest(f.replayCPU, f.replayDBCPU, f.replayN), peakRSS(servers[0].pid))
			continue
		}
		peer := figs[1]
		for i, s := range servers {
			f := figs[i]
			fmt.Fprintf(stdout, "| %d | %s | %.0f | %s / %s | **%.2f** | %.2f | %.0f | %s / %s | **%.2f** | %.2f | %s, %s | %s |\n",
				clients, s.name, f.created, pct(f.newLat, .50), pct(f.newLat, .99), f.created/peer.created, f.created/raw,
				f.replays, pct(f.replayLat, .50), pct(f.replayLat, .99), f.replays/peer.replays, f.replays/f.created,
				cpuPerRequest(f.newCPU, f.newDBCPU, f.newN), cpuPerRequest(f.replayCPU, f.replayDBCPU, f.replayN), peakRSS(s.pid))
		}
		fmt.Fprintf(stdout, "| %d | raw INSERT | %.0f tx/s | | | 1.00 | | | | | | |\n", clients, raw)
		if *baselineBin != "" {
			base := figs[len(figs)-1]
			fmt.Fprintf(stdout, "| %d | countersign / baseline | new %.3f | p99 %s vs %s | | | replay %.3f | p99 %s vs %s | | | | |\n",
				clients, figs[0].created/base.created, pct(figs[0].newLat, .99), pct(base.newLat, .99),
				figs[0].replays/base.replays, pct(figs[0].replayLat, .99), pct(base.replayLat, .99))
		}
	}
	return nil
}

// scratchDatabase creates an empty database, named prefix and a random
// suffix, on the server of adminURL and returns its URL and a function that
// drops it.
func scratchDatabase(ctx context.Context, adminURL, prefix string) (string, func(), error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("parsing -database-url: %w", err)
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("connecting to the PostgreSQL server: %w", err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := prefix + "_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		conn.Close(ctx)
		return "", nil, fmt.Errorf("creating a scratch database: %w", err)
	}
	u.Path = "/" + name
	return u.String(), func() {
		_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		conn.Close(context.Background())
	}, nil
}

// build builds countersign into dir; the package path works from anywhere
// inside the module, the smoke test's directory included.
func build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "countersign")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/countersign/countersign/cmd/countersign")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building countersign: %w\n%s", err, out)
	}
	return bin, nil
}

func startCountersign(ctx context.Context, bin, dir, dbURL string, extraEnv []string) (server, func(), error) {
	sum := sha256.Sum256([]byte(token))
	cfg := fmt.Sprintf(`agents: [{name: bench, token_sha256: %s}]
tools:
  billing.credit:
    approvers: [U0BENCH]
    dispatch: {url: "http://127.0.0.1:9/unused"}
`, hex.EncodeToString(sum[:]))
	cfgPath := filepath.Join(dir, "countersign.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return server{}, nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return server{}, nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(),
		"COUNTERSIGN_DATABASE_URL="+dbURL,
		"COUNTERSIGN_CONFIG="+cfgPath,
		"COUNTERSIGN_DISPATCH_SECRET=bench",
		"COUNTERSIGN_LISTEN="+addr,
	)
	cmd.Env = append(cmd.Env, extraEnv...)
	return start(ctx, "countersign", cmd, addr)
}

func startPeer(ctx context.Context, name, bin, dbURL string) (server, func(), error) {
	addr, err := freeAddr()
	if err != nil {
		return server{}, nil, err
	}
	cmd := exec.Command(bin, "-database-url", dbURL, "-listen", addr, "-token", token)
	return start(ctx, name, cmd, addr)
}

// start starts cmd and waits until it answers GET /readyz with 200.
func start(ctx context.Context, name string, cmd *exec.Cmd, addr string) (server, func(), error) {
	out := &headWriter{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return server{}, nil, fmt.Errorf("starting %s: %w", name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() { _ = cmd.Process.Kill(); <-exited }
	hc := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := hc.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return server{name: name, addr: addr, pid: cmd.Process.Pid}, stop, nil
			}
		}
		select {
		case <-exited:
			return server{}, nil, fmt.Errorf("%s exited before it was ready:\n%s", name, out)
		case <-ctx.Done():
			stop()
			return server{}, nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return server{}, nil, fmt.Errorf("%s was not ready within 30s:\n%s", name, out)
		}
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// headWriter keeps the first max bytes written to it: a server's start-up
// messages, for the error when it does not become ready.
type headWriter struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (w *headWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (w *headWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func client(clients int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
}

var runSeq atomic.Int64

// intake posts new intents from clients goroutines for d and returns the
// rate of 201s, their latencies and the bodies posted.
func intake(s server, clients int, d time.Duration) (float64, []time.Duration, []string, error) {
	hc := client(clients)
	defer hc.CloseIdleConnections()
	var mu sync.Mutex
	var bodies []string
	rate, lat, err := drive(clients, d, func() error {
		n := runSeq.Add(1)
		body := fmt.Sprintf(`{"run_id":"bench-new-%d","step":1,"tool":"billing.credit","effect":{"invoice":"inv_%d","amount_cents":4200,"currency":"USD"},"summary":"bench"}`, n, n)
		if status, resp, err := post(hc, s.addr, body); err != nil {
			return fmt.Errorf("%s intake: %w", s.name, err)
		} else if status != http.StatusCreated {
			return fmt.Errorf("%s intake answered %d: %s", s.name, status, resp)
		}
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
		return nil
	})
	return rate, lat, bodies, err
}

// replay re-posts stored intents (each replay is a 200 that must not write).
func replay(s server, clients int, d time.Duration, bodies []string) (float64, []time.Duration, error) {
	if len(bodies) == 0 {
		return 0, nil, fmt.Errorf("%s: no intent was created to replay", s.name)
	}
	hc := client(clients)
	defer hc.CloseIdleConnections()
	var next atomic.Int64
	return drive(clients, d, func() error {
		body := bodies[int(next.Add(1))%len(bodies)]
		status, resp, err := post(hc, s.addr, body)
		switch {
		case err != nil:
			return fmt.Errorf("%s replay: %w", s.name, err)
		case status != http.StatusOK:
			return fmt.Errorf("%s replay answered %d: %s", s.name, status, resp)
		}
		return nil
	})
}

func post(hc *http.Client, addr, body string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/requests", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// rawInserts is the PostgreSQL ceiling: one-row INSERT … ON CONFLICT DO
// NOTHING, each its own transaction, from clients connections.
func rawInserts(ctx context.Context, pool *pgxpool.Pool, clients int, d time.Duration) (float64, error) {
	body := bytes.Repeat([]byte("x"), 64)
	rate, _, err := drive(clients, d, func() error {
		key := fmt.Sprintf("raw_%d", runSeq.Add(1))
		_, err := pool.Exec(ctx, `INSERT INTO raw_intake (key, body) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, key, body)
		return err
	})
	return rate, err
}

// drive runs op in a loop from clients goroutines for d and returns the
// completed operations per second and each one's latency. A goroutine stops
// at its first error; the first error is returned when the phase ends.
func drive(clients int, d time.Duration, op func() error) (float64, []time.Duration, error) {
	stop := make(chan struct{})
	var (
		done    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		opErr   error
	)
	lats := make([][]time.Duration, clients)
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				if err := op(); err != nil {
					errOnce.Do(func() { opErr = err })
					return
				}
				lats[c] = append(lats[c], time.Since(t0))
				done.Add(1)
			}
		}()
	}
	time.Sleep(d) // the measured phase's length, not a wait for an event
	close(stop)
	wg.Wait()
	elapsed := time.Since(start)
	if opErr != nil {
		return 0, nil, opErr
	}
	return float64(done.Load()) / elapsed.Seconds(), slices.Concat(lats...), nil
}

// pct returns the p-th quantile of l, rounded for the table.
func pct(l []time.Duration, p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))].Round(10 * time.Microsecond)
}

// cpuTime reads the user and system CPU time a process has used so far
// (/proc/PID/stat, fields 14 and 15, in clock ticks of 1/100 s on Linux).
func cpuTime(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, field 2, may hold spaces; count from after it.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// peakRSS reads a process's high-water resident set size.
func peakRSS(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "n/a"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			kb, _ := strconv.Atoi(strings.Fields(line)[1])
			return fmt.Sprintf("%.1f MiB", float64(kb)/1024)
		}
	}
	return "n/a"
}
