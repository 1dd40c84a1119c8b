package bot_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
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
// 1,000,000 requests in the table (100,000 of them approved and executed),
// signed, over HTTP, one lookup at a time.
//
// With -short (the smoke run in make test) the table holds 1,000 requests and
// each kind runs 20 lookups.
func BenchmarkLookup(b *testing.B) {
	bb := setup(b, &options{dbURL: benchPoolURL(b)})
	rows, lookups, sample := 1_000_000, 2000, 1
	if testing.Short() {
		rows, lookups, sample = 1000, 20, 100
	}
	seed(b, bb, rows)
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
	for _, kind := range []string{"prefix", "business_id"} {
		b.Run(kind, func(b *testing.B) {
			latencies := make([]time.Duration, 0, lookups*b.N)
			for range b.N {
				for i := range lookups {
					text := keys[i%len(keys)][:11] // wa_ + the 8-character minimum
					if kind == "business_id" {
						text = fmt.Sprintf("inv_%d", rand.IntN(rows)+1)
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

// seed fills requests with rows set-based (generate_series), as intake would
// have stored them, with a decision and a succeeded execution for every tenth.
func seed(b *testing.B, bb *bundle, rows int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	for _, sql := range []string{
		`DROP INDEX requests_effect_strings`,
		fmt.Sprintf(`INSERT INTO requests (key, basis_hash, run_id, step, tool, effect_strings, snapshot, payload_hash, summary, reason,
	requested_by, requested_for, status, expires_at, created_at, updated_at, card_channel, card_ts)
SELECT 'wa_' || encode(sha256(convert_to('seed' || i, 'UTF8')), 'hex'), 'sha256:' || md5(i::text), 'r-' || (i / 10), to_jsonb(i %% 10),
	'billing.credit', countersign_effect_strings(e), convert_to(e::text, 'UTF8'), 'sha256:' || md5(e::text), 'Credit inv_' || i, 'seeded',
	'billing-agent', 'UREQ', CASE WHEN i %% 10 = 0 THEN 'approved' ELSE 'pending' END,
	now() + interval '3 days', now() - (i || ' seconds')::interval, now(), 'C0BILLING', '1700000000.' || lpad(i::text, 6, '0')
FROM generate_series(1, %d) AS i,
	LATERAL (SELECT jsonb_build_object('invoice', 'inv_' || i, 'amount_cents', i, 'currency', 'USD',
		'customer', jsonb_build_object('id', 'cus_' || (i %% 50000), 'note', 'seeded row'))) AS x(e)`, rows),
		`INSERT INTO decisions (request_id, round, verdict, decided_by, via, payload_hash_seen)
SELECT id, 1, 'approve', 'UANA', 'slack', payload_hash FROM requests WHERE status = 'approved'`,
		`INSERT INTO executions (request_id, decision_id, key, tool, snapshot, snapshot_hash, state, attempts, max_attempts, approved_at, provider_ref)
SELECT d.request_id, d.id, r.key, r.tool, r.snapshot, r.payload_hash, 'succeeded', 1, 5, d.decided_at, 'cr_' || d.id
FROM decisions d JOIN requests r ON r.id = d.request_id`,
		`CREATE INDEX requests_effect_strings ON requests USING gin (effect_strings)`,
		`VACUUM ANALYZE requests`, `VACUUM ANALYZE decisions`, `VACUUM ANALYZE executions`,
	} {
		t0 := time.Now()
		if _, err := bb.db.Pool.Exec(ctx, sql); err != nil {
			b.Fatalf("seeding: %v\n%s", err, sql)
		}
		b.Logf("%6s  %.60s", time.Since(t0).Round(time.Second), strings.Join(strings.Fields(sql), " "))
	}
	b.Logf("seeded %d requests in %s", rows, time.Since(start).Round(time.Second))
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(i, len(sorted))-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
