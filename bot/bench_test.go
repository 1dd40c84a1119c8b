package bot_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/storetest"
)

// benchPoolURL is a fresh database with a pool large enough for the clients.
func benchPoolURL(b *testing.B) string {
	return storetest.NewURL(b) + "&pool_max_conns=16"
}

// BenchmarkClickStorm: 1,000 requests, each clicked 4 times at once (signed,
// over HTTP, against PostgreSQL), with `parallel` requests in flight. It
// checks that exactly 1,000 decisions stand and reports the acknowledgement
// latency percentiles.
//
// clickers=same is one click delivered 4 times (Slack's retries, a double
// click); clickers=distinct is 4 different approvers clicking at once, which
// nothing in-process can share.
//
// clickers=two_of_n is 4 different approvers clicking at once on a tool
// that needs 2 approvals: each request gets exactly 2 votes and 1 decision.
//
// With -short (the smoke run in make test) it storms 20 requests, not 1,000.
func BenchmarkClickStorm(b *testing.B) {
	requests := 1000
	if testing.Short() {
		requests = 20
	}
	for _, clickers := range []string{"same", "distinct", "two_of_n"} {
		for _, parallel := range []int{1, 8} {
			b.Run(fmt.Sprintf("clickers=%s/requests_in_flight=%d", clickers, parallel), func(b *testing.B) {
				for range b.N {
					clickStorm(b, requests, parallel, clickers)
				}
			})
		}
	}
}

func clickStorm(b *testing.B, n, parallel int, clickers string) {
	b.StopTimer()
	bb := setup(b, &options{dbURL: benchPoolURL(b)})
	bb.fake.SetGroup("S0FINANCE", "UCAT", "UDAN")
	users := []string{"UANA", "UANA", "UANA", "UANA"}
	tool := "billing.credit"
	switch clickers {
	case "distinct":
		users = []string{"UANA", "UBEN", "UCAT", "UDAN"}
	case "two_of_n":
		users, tool = []string{"UANA", "UBEN", "UCAT", "UDAN"}, "billing.quorum"
	}
	reqs := make([]store.Request, n)
	for i := range n {
		reqs[i] = bb.submit(intent{n: i, tool: tool})
	}
	type click struct {
		body   []byte
		header http.Header
	}
	clicks := make([][]click, n)
	for i, r := range reqs {
		for _, user := range users {
			body := bottest.ClickForm(bottest.ClickPayload(user, billingChan, "approve", decisionValue(r)))
			clicks[i] = append(clicks[i], click{body, bottest.Sign(secret, time.Now(), body)})
		}
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4 * parallel}}
	warmUp(b, bb, client, 4*parallel)
	latencies := make([]time.Duration, 0, 4*n)
	var mu sync.Mutex
	work := make(chan []click)
	var wg sync.WaitGroup
	b.StartTimer()
	start := time.Now()
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cs := range work {
				var inner sync.WaitGroup
				for _, c := range cs {
					inner.Add(1)
					go func() {
						defer inner.Done()
						req, _ := http.NewRequest(http.MethodPost, bb.server.URL+"/slack/interactions", bytesReader(c.body))
						req.Header = c.header.Clone()
						t0 := time.Now()
						resp, err := client.Do(req)
						d := time.Since(t0)
						if err != nil || resp.StatusCode != http.StatusOK {
							b.Errorf("click: %v %v", err, resp)
							return
						}
						resp.Body.Close()
						mu.Lock()
						latencies = append(latencies, d)
						mu.Unlock()
					}()
				}
				inner.Wait()
			}
		}()
	}
	for _, cs := range clicks {
		work <- cs
	}
	close(work)
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	bb.bot.Wait()
	if got := bb.count(`SELECT count(*) FROM decisions`); got != n {
		b.Fatalf("%d decisions, want %d", got, n)
	}
	if clickers == "two_of_n" {
		if got := bb.count(`SELECT count(*) FROM votes`); got != 2*n {
			b.Fatalf("%d votes, want %d (2 per request)", got, 2*n)
		}
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "clicks/s")
	b.ReportMetric(ms(pct(latencies, 50)), "p50_ms")
	b.ReportMetric(ms(pct(latencies, 99)), "p99_ms")
	b.ReportMetric(ms(latencies[len(latencies)-1]), "max_ms")
}

// warmUp opens the database pool's and the HTTP client's connections, as a
// running server has them, so the storm does not measure connection set-up.
func warmUp(b *testing.B, bb *bundle, client *http.Client, conns int) {
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c, err := bb.db.Pool.Acquire(bb.ctx); err == nil {
				_ = c.Ping(bb.ctx)
				time.AfterFunc(100*time.Millisecond, c.Release)
			}
		}()
	}
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Post(bb.server.URL+"/slack/interactions", "application/x-www-form-urlencoded", nil)
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
}

// BenchmarkLookup: /countersign by key prefix and by business id with
// 1,000,000 requests in the table (storetest.SeedLedger with Live, the
// listing benchmark's seed: 70 % approved and executed), signed, over HTTP,
// one lookup at a time. A business id is an invoice, which one request
// names, or a customer, which one request in 100,000 names (10 at this
// size, 100 at 10,000,000).
//
// With -short (the smoke run in make test) the table holds 1,000 requests and
// each kind runs 20 lookups. COUNTERSIGN_BENCH_REQUESTS sets another count,
// and COUNTERSIGN_BENCH_DATABASE names a database to keep seeded and reuse
// (storetest.SeededURL), shared with BenchmarkList in hook.
func BenchmarkLookup(b *testing.B) {
	rows, lookups, sample := storetest.SeedSize(b, 1_000_000, 1000), 2000, 1
	if testing.Short() {
		lookups, sample = 20, 100
	}
	url := storetest.SeededURL(b, storetest.Seed{Requests: rows, Live: true}) + "&pool_max_conns=16"
	bb := setup(b, &options{dbURL: url})
	keys := make([]string, 0, lookups)
	r, err := bb.db.Pool.Query(bb.ctx, fmt.Sprintf(`SELECT key FROM requests TABLESAMPLE SYSTEM (%d) LIMIT %d`, sample, lookups))
	if err != nil {
		b.Fatal(err)
	}
	for r.Next() {
		var k string
		_ = r.Scan(&k)
		keys = append(keys, k)
	}
	r.Close()
	for _, kind := range []string{"prefix", "business_id", "customer"} {
		b.Run(kind, func(b *testing.B) {
			latencies := make([]time.Duration, 0, lookups*b.N)
			for range b.N {
				for i := range lookups {
					text := keys[i%len(keys)][:11] // wa_ + the 8-character minimum
					switch kind {
					case "business_id":
						text = fmt.Sprintf("inv_%d", rand.IntN(rows)+1)
					case "customer":
						text = fmt.Sprintf("cus_%d", (rand.IntN(rows)+1)%100_000)
					}
					t0 := time.Now()
					got := bb.command("USUP", text)
					latencies = append(latencies, time.Since(t0))
					if len(got) < 40 {
						b.Fatalf("/countersign %s: %s", text, got)
					}
				}
			}
			slices.Sort(latencies)
			b.ReportMetric(ms(pct(latencies, 50)), "p50_ms")
			b.ReportMetric(ms(pct(latencies, 99)), "p99_ms")
			b.ReportMetric(ms(latencies[len(latencies)-1]), "max_ms")
		})
	}
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(i, len(sorted))-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
