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
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/countersign/countersign/cmd/internal/benchserve"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// server is a hook under load: countersign or the peer.
type server = benchserve.Server

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

// run is main with its clean-up (processes, scratch databases) kept on
// errors; the smoke test calls it with tiny sizes.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("intakebench", flag.ContinueOnError)
	adminURL := flags.String("database-url", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL server (scratch databases are created on it and dropped at the end)")
	duration := flags.Duration("duration", 2*time.Second, "length of each measured phase")
	rounds := flags.Int("rounds", 5, "each hook's new-intent and replay phases are interleaved this many times, so background load falls on all alike (the raw phase runs as many times first, before any server starts)")
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
	bin, err := benchserve.Build(ctx, dir)
	if err != nil {
		return err
	}
	dbURL, drop, err := benchserve.ScratchDatabase(ctx, *adminURL, "intakebench")
	if err != nil {
		return err
	}
	defer drop()
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

	// The raw rates are measured before any server starts: the raw phase's
	// connections beside three servers' pools passed PostgreSQL's default
	// limit of 100 connections, and a server answered 503.
	raws := make(map[int]float64, len(counts))
	for _, clients := range counts {
		for range *rounds {
			rate, err := rawInserts(ctx, pool, clients, *duration)
			if err != nil {
				return fmt.Errorf("raw inserts: %w", err)
			}
			raws[clients] += rate / float64(*rounds)
		}
	}
	pool.Reset()
	cs, stop, err := benchserve.StartServe(ctx, bin, dir, dbURL, serverEnv)
	if err != nil {
		return err
	}
	defer stop()
	cs.Database = benchserve.DatabaseName(dbURL)
	servers := []server{cs}
	if *peerBin != "" {
		peerURL, dropPeer, err := benchserve.ScratchDatabase(ctx, *adminURL, "intakebench_peer")
		if err != nil {
			return err
		}
		defer dropPeer()
		peer, stopPeer, err := startPeer(ctx, *peerName, *peerBin, peerURL)
		if err != nil {
			return err
		}
		defer stopPeer()
		peer.Database = benchserve.DatabaseName(peerURL)
		servers = append(servers, peer)
	}
	if *baselineBin != "" {
		baseURL, dropBase, err := benchserve.ScratchDatabase(ctx, *adminURL, "intakebench_baseline")
		if err != nil {
			return err
		}
		defer dropBase()
		base, stopBase, err := benchserve.StartServe(ctx, *baselineBin, dir, baseURL, serverEnv)
		if err != nil {
			return err
		}
		defer stopBase()
		base.Name, base.Database = "baseline", benchserve.DatabaseName(baseURL)
		servers = append(servers, base)
	}

	if len(servers) == 1 {
		fmt.Fprintf(stdout, "| clients | raw INSERT tx/s | new-intent req/s | new p50 / p99 | new / raw | replay req/s | replay p50 / p99 | replay / new | server + database CPU / new, / replay | server peak RSS |\n")
		fmt.Fprintf(stdout, "|---|---|---|---|---|---|---|---|---|---|\n")
	} else {
		fmt.Fprintf(stdout, "| clients | hook | new-intent req/s | new p50 / p99 | new / %[1]s | new / raw | replay req/s | replay p50 / p99 | replay / %[1]s | replay / new | server + database CPU / new, / replay | peak RSS |\n", servers[1].Name)
		fmt.Fprintf(stdout, "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	}
	for _, clients := range counts {
		raw := raws[clients]
		figs := make([]figures, len(servers))
		for range *rounds {
			for i, s := range servers {
				before, dbBefore := benchserve.CPUTime(s.PID), benchserve.DatabaseCPU(ctx, pool, s.Database)
				rate, lat, bodies, err := intake(s, clients, *duration)
				if err != nil {
					return err
				}
				figs[i].created += rate / float64(*rounds)
				figs[i].newLat = append(figs[i].newLat, lat...)
				figs[i].newCPU += benchserve.CPUTime(s.PID) - before
				figs[i].newDBCPU += benchserve.DatabaseCPU(ctx, pool, s.Database) - dbBefore
				figs[i].newN += len(lat)
				before, dbBefore = benchserve.CPUTime(s.PID), benchserve.DatabaseCPU(ctx, pool, s.Database)
				rate, lat, err = replay(s, clients, *duration, bodies)
				if err != nil {
					return err
				}
				figs[i].replays += rate / float64(*rounds)
				figs[i].replayLat = append(figs[i].replayLat, lat...)
				figs[i].replayCPU += benchserve.CPUTime(s.PID) - before
				figs[i].replayDBCPU += benchserve.DatabaseCPU(ctx, pool, s.Database) - dbBefore
				figs[i].replayN += len(lat)
			}
		}
		if len(servers) == 1 {
			f := figs[0]
			fmt.Fprintf(stdout, "| %d | %.0f | %.0f | %s / %s | %.2f | %.0f | %s / %s | %.2f | %s, %s | %s |\n",
				clients, raw, f.created, benchserve.Pct(f.newLat, .50), benchserve.Pct(f.newLat, .99), f.created/raw,
				f.replays, benchserve.Pct(f.replayLat, .50), benchserve.Pct(f.replayLat, .99), f.replays/f.created,
				cpuPerRequest(f.newCPU, f.newDBCPU, f.newN), cpuPerRequest(f.replayCPU, f.replayDBCPU, f.replayN), benchserve.PeakRSS(servers[0].PID))
			continue
		}
		peer := figs[1]
		for i, s := range servers {
			f := figs[i]
			fmt.Fprintf(stdout, "| %d | %s | %.0f | %s / %s | **%.2f** | %.2f | %.0f | %s / %s | **%.2f** | %.2f | %s, %s | %s |\n",
				clients, s.Name, f.created, benchserve.Pct(f.newLat, .50), benchserve.Pct(f.newLat, .99), f.created/peer.created, f.created/raw,
				f.replays, benchserve.Pct(f.replayLat, .50), benchserve.Pct(f.replayLat, .99), f.replays/peer.replays, f.replays/f.created,
				cpuPerRequest(f.newCPU, f.newDBCPU, f.newN), cpuPerRequest(f.replayCPU, f.replayDBCPU, f.replayN), benchserve.PeakRSS(s.PID))
		}
		fmt.Fprintf(stdout, "| %d | raw INSERT | %.0f tx/s | | | 1.00 | | | | | | |\n", clients, raw)
		if *baselineBin != "" {
			base := figs[len(figs)-1]
			fmt.Fprintf(stdout, "| %d | countersign / baseline | new %.3f | p99 %s vs %s | | | replay %.3f | p99 %s vs %s | | | | |\n",
				clients, figs[0].created/base.created, benchserve.Pct(figs[0].newLat, .99), benchserve.Pct(base.newLat, .99),
				figs[0].replays/base.replays, benchserve.Pct(figs[0].replayLat, .99), benchserve.Pct(base.replayLat, .99))
		}
	}
	return nil
}

// startPeer starts a peer hook on its scratch database and waits until it
// is ready.
func startPeer(ctx context.Context, name, bin, dbURL string) (server, func(), error) {
	addr, err := benchserve.FreeAddr()
	if err != nil {
		return server{}, nil, err
	}
	cmd := exec.Command(bin, "-database-url", dbURL, "-listen", addr, "-token", benchserve.Token)
	return benchserve.Start(ctx, name, cmd, addr)
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
		if status, resp, err := post(hc, s.Addr, body); err != nil {
			return fmt.Errorf("%s intake: %w", s.Name, err)
		} else if status != http.StatusCreated {
			return fmt.Errorf("%s intake answered %d: %s", s.Name, status, resp)
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
		return 0, nil, fmt.Errorf("%s: no intent was created to replay", s.Name)
	}
	hc := client(clients)
	defer hc.CloseIdleConnections()
	var next atomic.Int64
	return drive(clients, d, func() error {
		body := bodies[int(next.Add(1))%len(bodies)]
		status, resp, err := post(hc, s.Addr, body)
		switch {
		case err != nil:
			return fmt.Errorf("%s replay: %w", s.Name, err)
		case status != http.StatusOK:
			return fmt.Errorf("%s replay answered %d: %s", s.Name, status, resp)
		}
		return nil
	})
}

func post(hc *http.Client, addr, body string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/requests", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+benchserve.Token)
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
