// Command intakebench measures the agent hook over real HTTP on loopback
// against a local PostgreSQL, beside the raw commit rate of one-row
// INSERT … ON CONFLICT DO NOTHING transactions at the same client counts, in
// the same run. It builds and starts a real `countersign serve` process and
// reports its peak resident memory.
//
//	go run ./cmd/intakebench -clients 8,32 -rounds 5 -duration 2s
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
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
	adminURL := flag.String("database-url", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL server (a scratch database is created on it)")
	duration := flag.Duration("duration", 2*time.Second, "length of each measured phase")
	rounds := flag.Int("rounds", 5, "raw, new-intent and replay phases are interleaved this many times, so background load falls on all three alike")
	clientList := flag.String("clients", "8,32", "concurrent client counts")
	flag.Parse()
	ctx := context.Background()

	dbURL := scratchDatabase(ctx, *adminURL, "countersign_bench")
	bin := build()
	addr, pid, stop := startServer(bin, dbURL)
	defer stop()

	// The raw baseline gets one connection per client, as pgbench -c would.
	poolCfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		log.Fatal(err)
	}
	poolCfg.MaxConns = 64
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS raw_intake (key text PRIMARY KEY, body bytea NOT NULL)`); err != nil {
		log.Fatal(err)
	}

	fmt.Printf("| clients | raw INSERT tx/s | new-intent req/s | new / raw | replay req/s | replay / new | server peak RSS |\n")
	fmt.Printf("|---|---|---|---|---|---|---|\n")
	for _, field := range strings.Split(*clientList, ",") {
		clients, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil {
			log.Fatal(err)
		}
		var raw, created, replays float64
		for range *rounds {
			raw += rawInserts(ctx, pool, clients, *duration) / float64(*rounds)
			rate, keys := intake(addr, clients, *duration, "new")
			created += rate / float64(*rounds)
			replays += replay(addr, clients, *duration, keys) / float64(*rounds)
		}
		fmt.Printf("| %d | %.0f | %.0f | %.2f | %.0f | %.2f | %s |\n",
			clients, raw, created, created/raw, replays, replays/created, peakRSS(pid))
	}
}

// scratchDatabase drops and recreates name on the server and returns its URL.
func scratchDatabase(ctx context.Context, adminURL, name string) string {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		log.Fatalf("connecting to %s: %v", adminURL, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		log.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		log.Fatal(err)
	}
	u, _ := url.Parse(adminURL)
	u.Path = "/" + name
	return u.String()
}

func build() string {
	bin := filepath.Join(os.TempDir(), "countersign-intakebench")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/countersign")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatalf("building countersign: %v", err)
	}
	return bin
}

func startServer(bin, dbURL string) (addr string, pid int, stop func()) {
	sum := sha256.Sum256([]byte(token))
	cfg := fmt.Sprintf(`agents: [{name: bench, token_sha256: %s}]
tools:
  billing.credit:
    approvers: [U0BENCH]
    dispatch: {url: "http://127.0.0.1:9/unused"}
`, hex.EncodeToString(sum[:]))
	cfgPath := filepath.Join(os.TempDir(), "countersign-intakebench.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		log.Fatal(err)
	}
	addr = "127.0.0.1:18080"
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(),
		"COUNTERSIGN_DATABASE_URL="+dbURL,
		"COUNTERSIGN_CONFIG="+cfgPath,
		"COUNTERSIGN_DISPATCH_SECRET=bench",
		"COUNTERSIGN_LISTEN="+addr,
	)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			log.Fatal("countersign did not become ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return addr, cmd.Process.Pid, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
}

func client(clients int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
}

var runSeq atomic.Int64

// intake posts new intents from clients goroutines for d and returns the
// rate of 201s and the bodies posted.
func intake(addr string, clients int, d time.Duration, label string) (float64, []string) {
	hc := client(clients)
	var mu sync.Mutex
	var bodies []string
	rate := drive(clients, d, func() {
		n := runSeq.Add(1)
		body := fmt.Sprintf(`{"run_id":"bench-%s-%d","step":1,"tool":"billing.credit","effect":{"invoice":"inv_%d","amount_cents":4200,"currency":"USD"},"summary":"bench"}`, label, n, n)
		if status, resp := post(hc, addr, body); status != http.StatusCreated {
			log.Fatalf("intake answered %d: %s", status, resp)
		}
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
	})
	return rate, bodies
}

// replay re-posts stored intents (each replay is a 200 that must not write).
func replay(addr string, clients int, d time.Duration, bodies []string) float64 {
	hc := client(clients)
	var next atomic.Int64
	return drive(clients, d, func() {
		body := bodies[int(next.Add(1))%len(bodies)]
		if status, resp := post(hc, addr, body); status != http.StatusOK {
			log.Fatalf("replay answered %d: %s", status, resp)
		}
	})
}

func post(hc *http.Client, addr, body string) (int, []byte) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/requests", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// rawInserts is the PostgreSQL ceiling: one-row INSERT … ON CONFLICT DO
// NOTHING, each its own transaction, from clients connections.
func rawInserts(ctx context.Context, pool *pgxpool.Pool, clients int, d time.Duration) float64 {
	body := bytes.Repeat([]byte("x"), 64)
	return drive(clients, d, func() {
		key := fmt.Sprintf("raw_%d", runSeq.Add(1))
		if _, err := pool.Exec(ctx, `INSERT INTO raw_intake (key, body) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, key, body); err != nil {
			log.Fatal(err)
		}
	})
}

// drive runs op in a loop from clients goroutines for d and returns the
// completed operations per second.
func drive(clients int, d time.Duration, op func()) float64 {
	stop := make(chan struct{})
	var done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				op()
				done.Add(1)
			}
		}()
	}
	time.Sleep(d) // the measured phase's length, not a wait for an event
	close(stop)
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds()
}

// peakRSS reads the server's high-water resident set size.
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
