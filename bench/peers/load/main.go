// Command load drives agent-hook servers that speak countersign's request shape
// (POST /v1/requests, 201 new, 200 repeat) side by side: for each client count
// it interleaves a new-intent phase and a replay phase on every target, round
// after round, so background load falls on all alike, and prints each target's
// rates and its ratio to the first target.
//
//	go run ./load -target countersign=http://127.0.0.1:18080 -target river=http://127.0.0.1:18090 -clients 8,32
//
// make bench-intake does not use it: intakebench starts both servers itself
// and drives them the same way, beside the raw commit rate. This driver is for
// servers started by hand, a deployed countersign included.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type target struct{ name, url string }

type targets []target

func (t *targets) String() string { return fmt.Sprint(*t) }
func (t *targets) Set(s string) error {
	name, url, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want NAME=URL, got %q", s)
	}
	*t = append(*t, target{name, strings.TrimRight(url, "/")})
	return nil
}

var seq atomic.Int64

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("load", flag.ContinueOnError)
	var ts targets
	flags.Var(&ts, "target", "NAME=BASE_URL of a server to drive (repeat; the first is the reference for ratios)")
	token := flags.String("token", "bench-agent-token", "bearer token every target accepts")
	tool := flags.String("tool", "billing.credit", "tool name in the intents")
	clientList := flags.String("clients", "8,32", "concurrent client counts")
	rounds := flags.Int("rounds", 3, "rounds of interleaved phases")
	duration := flags.Duration("duration", 2*time.Second, "length of each phase")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if len(ts) == 0 {
		return fmt.Errorf("give at least one -target")
	}
	tag := strconv.FormatInt(time.Now().UnixNano(), 36)

	fmt.Fprintln(stdout, "| clients | target | new req/s | new p50 | new p99 | replay req/s | replay / new | new vs "+ts[0].name+" |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|")
	for _, f := range strings.Split(*clientList, ",") {
		clients, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("-clients: %w", err)
		}
		newRate := make([]float64, len(ts))
		repRate := make([]float64, len(ts))
		newLat := make([][]time.Duration, len(ts))
		for range *rounds {
			for i, t := range ts {
				hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
				var mu sync.Mutex
				var bodies []string
				rate, lat, err := drive(ctx, clients, *duration, func() error {
					n := seq.Add(1)
					body := fmt.Sprintf(`{"run_id":"load-%s-%d","step":1,"tool":%q,"effect":{"invoice":"inv_%d","amount_cents":4200,"currency":"USD"},"summary":"load"}`, tag, n, *tool, n)
					if status, resp, err := post(hc, t.url, *token, body); err != nil {
						return fmt.Errorf("%s: new intent: %w", t.name, err)
					} else if status != http.StatusCreated {
						return fmt.Errorf("%s: new intent answered %d: %s", t.name, status, resp)
					}
					mu.Lock()
					bodies = append(bodies, body)
					mu.Unlock()
					return nil
				})
				if err != nil {
					return err
				}
				if len(bodies) == 0 {
					return fmt.Errorf("%s: no intent was created to replay", t.name)
				}
				newRate[i] += rate / float64(*rounds)
				newLat[i] = append(newLat[i], lat...)
				var next atomic.Int64
				rate, _, err = drive(ctx, clients, *duration, func() error {
					body := bodies[int(next.Add(1))%len(bodies)]
					if status, resp, err := post(hc, t.url, *token, body); err != nil {
						return fmt.Errorf("%s: replay: %w", t.name, err)
					} else if status != http.StatusOK {
						return fmt.Errorf("%s: replay answered %d: %s", t.name, status, resp)
					}
					return nil
				})
				if err != nil {
					return err
				}
				repRate[i] += rate / float64(*rounds)
				hc.CloseIdleConnections()
			}
		}
		for i, t := range ts {
			p50, p99 := pct(newLat[i], 0.50), pct(newLat[i], 0.99)
			fmt.Fprintf(stdout, "| %d | %s | %.0f | %s | %s | %.0f | %.2f | %.2f |\n", clients, t.name, newRate[i],
				p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), repRate[i], repRate[i]/newRate[i], newRate[i]/newRate[0])
		}
	}
	return nil
}

func post(hc *http.Client, base, token, body string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/requests", strings.NewReader(body))
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

// drive runs op from the given number of goroutines for d and returns ops/s
// and each op's latency. A goroutine stops at its first error; the first
// error is returned when the phase ends.
func drive(ctx context.Context, clients int, d time.Duration, op func() error) (float64, []time.Duration, error) {
	var wg sync.WaitGroup
	var n atomic.Int64
	var errOnce sync.Once
	var opErr error
	lats := make([][]time.Duration, clients)
	start := time.Now()
	deadline := start.Add(d)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				if err := op(); err != nil {
					errOnce.Do(func() { opErr = err })
					return
				}
				lats[c] = append(lats[c], time.Since(t0))
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if opErr != nil {
		return 0, nil, opErr
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	return float64(n.Load()) / time.Since(start).Seconds(), all, ctx.Err()
}

func pct(l []time.Duration, p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	return l[int(p*float64(len(l)-1))]
}
