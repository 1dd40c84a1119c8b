package hook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/internal/namedsql"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// BenchmarkList: GET /v1/requests on PostgreSQL with 1,000,000 requests in
// the table, spread over 50 agents, 50 tools and every status (5 % pending,
// 70 % approved with a decision and an execution, about 2,000 of those still
// in flight; the rest rejected, expired or cancelled). One page at a time, over
// HTTP, as billing-agent (20,000 requests of its own) or as an admin agent;
// each page is the full representation of 20 requests. It reports p50 and
// p99 of the whole page and of the list read alone (the store's
// ListRequests, without the representations), and logs each query's plan.
//
// With -short (the smoke run in make test) the table holds 5,000 requests and
// each query runs 10 times; COUNTERSIGN_BENCH_REQUESTS sets another count,
// and COUNTERSIGN_BENCH_DATABASE names a database to keep seeded and reuse
// (storetest.SeededURL), shared with BenchmarkLookup in bot.
func BenchmarkList(b *testing.B) {
	rows, pages := storetest.SeedSize(b, 1_000_000, 5000), 500
	if testing.Short() {
		pages = 10
	}
	ctx := context.Background()
	url := storetest.SeededURL(b, storetest.Seed{Requests: rows, Live: true}) + "&pool_max_conns=16"
	db, err := postgres.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)

	ledger := store.NewLedger(db, store.Options{})
	logger := slog.New(slog.DiscardHandler)
	svc := approvalstest.New(b, approvals.Config{DB: ledger, Logger: logger, Tools: map[string]approvals.Tool{
		"billing.credit": {Name: "billing.credit", Approvers: []string{approverA}, RequestTTL: time.Hour},
	}})
	var agents Agents
	for _, a := range []approvals.Agent{{Name: "billing-agent"}, {Name: "auditor", Admin: true}} {
		token := map[bool]string{false: testToken, true: tokenAdmin}[a.Admin]
		sum := sha256.Sum256([]byte(token))
		agent, err := ParseAgent(a.Name, hex.EncodeToString(sum[:]))
		if err != nil {
			b.Fatal(err)
		}
		agent.Admin = a.Admin
		agents = append(agents, agent)
	}
	notifier, _, _ := db.Notifier(logger)
	server := httptest.NewServer(NewHandler(svc, agents, notifier, logger, NewMetrics(prometheus.NewRegistry())))
	b.Cleanup(server.Close)

	// A position 10,000 requests deep in billing-agent's listing (1 % of the
	// table under -short): among the newest, which hold the open work at
	// any size.
	var deep store.RequestPosition
	if err := db.Pool.QueryRow(ctx, `SELECT created_at, id::text FROM requests WHERE requested_by = 'billing-agent'
		ORDER BY created_at DESC, id DESC OFFSET $1 LIMIT 1`, min(rows/100, 10_000)).Scan(&deep.CreatedAt, &deep.ID); err != nil {
		b.Fatal(err)
	}
	cursor, err := encodeCursor(deep)
	if err != nil {
		b.Fatal(err)
	}
	run := "run-0-7" // ten of billing-agent's requests
	queries := namedsql.MustLoad(os.DirFS("../store/postgres"), "queries.sql")

	for _, c := range []struct {
		name, token, query string
	}{
		{"newest", testToken, ""},
		{"status=pending&tool", testToken, "status=pending&tool=billing.credit"},
		{"settled=false", testToken, "settled=false"},
		{"settled=true", testToken, "settled=true"},
		{"status=rejected", testToken, "status=rejected"},
		{"run_id", testToken, "run_id=" + run},
		{"deep", testToken, "cursor=" + cursor},
		{"deep&status=pending&tool", testToken, "status=pending&tool=billing.credit&cursor=" + cursor},
		{"admin/newest", tokenAdmin, ""},
		{"admin/run_id", tokenAdmin, "run_id=" + run},
		{"admin/status=pending", tokenAdmin, "status=pending"},
		{"admin/settled=false", tokenAdmin, "settled=false"},
	} {
		b.Run(c.name, func(b *testing.B) {
			p, err := parseListQuery(c.query)
			if err != nil {
				b.Fatal(err)
			}
			agent := agents[0].Agent
			if c.token == tokenAdmin {
				agent = agents[1].Agent
			}
			if !testing.Short() {
				logPlan(b, db, queries.Get("list_requests"), agent, p)
			}
			var whole, read []time.Duration
			for range b.N {
				for range pages {
					t0 := time.Now()
					got, err := svc.List(ctx, agent, store.ListRequestsParams{Status: p.Status, Tool: p.Tool, RunID: p.RunID,
						Settled: p.Settled, After: p.After, Limit: p.Limit + 1})
					read = append(read, time.Since(t0))
					if err != nil || len(got) == 0 && !testing.Short() {
						b.Fatalf("List(%s) = %d requests, %v", c.query, len(got), err)
					}
					t0 = time.Now()
					listed := getPage(b, server.URL, c.token, c.query)
					whole = append(whole, time.Since(t0))
					if len(listed.Data) != min(len(got), p.Limit) {
						b.Fatalf("?%s listed %d requests, the read %d", c.query, len(listed.Data), len(got))
					}
				}
			}
			slices.Sort(whole)
			slices.Sort(read)
			b.ReportMetric(ms(pct(whole, 50)), "page_p50_ms")
			b.ReportMetric(ms(pct(whole, 99)), "page_p99_ms")
			b.ReportMetric(ms(pct(read, 50)), "read_p50_ms")
			b.ReportMetric(ms(pct(read, 99)), "read_p99_ms")
		})
	}
}

// getPage GETs one page of the list.
func getPage(b *testing.B, base, token, query string) page {
	req, err := http.NewRequest(http.MethodGet, base+"/v1/requests?"+query, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var p page
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&p) != nil {
		b.Fatalf("GET /v1/requests?%s = %d", query, resp.StatusCode)
	}
	return p
}

// logPlan logs how PostgreSQL runs the list's statement for agent and p, as
// the driver sends it: planned for these arguments.
func logPlan(b *testing.B, db *postgres.Driver, query string, agent approvals.Agent, p store.ListRequestsParams) {
	by := agent.Name
	if agent.Admin {
		by = ""
	}
	var afterAt *time.Time
	var afterID *string
	if p.After != nil {
		afterAt, afterID = &p.After.CreatedAt, &p.After.ID
	}
	rows, err := db.Pool.Query(context.Background(), "EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) "+query, pgx.QueryExecModeCacheDescribe,
		by, string(p.Status), p.Tool, p.RunID, p.Settled, afterAt, afterID, p.Limit+1)
	if err != nil {
		b.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.Fatal(err)
	}
	// A benchmark's log is cut to a few lines: one line of the nodes that
	// read rows, and the times.
	var read []string
	for _, line := range lines {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "->"))
		if strings.Contains(line, " Scan ") && !strings.HasPrefix(line, "Subquery") ||
			strings.HasPrefix(line, "Sort Method") || strings.HasSuffix(line, " ms") {
			read = append(read, line)
		}
	}
	b.Logf("plan: %s", strings.Join(read, "; "))
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(i, len(sorted))-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
