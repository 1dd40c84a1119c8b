package main

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// BenchmarkIntakeAtScale: intake as BenchmarkRetention measures it alone
// (8 clients, a new intent every 40 ms each, through the group-commit
// batcher as serve wires it), first on an empty ledger and then on a
// ledger of 1,000,000 requests (storetest.Seed with Live, the listing's
// and the lookups' seed), each for 20 s after a second of warm-up. It
// reports p50 and p99 of each and the ratio of the p99s: what the size of
// the table costs a new intent.
//
// With COUNTERSIGN_BENCH_DATABASE set, the seeded ledger is a file copy of
// the kept database, dropped afterwards. With -short (the smoke run in make
// test) it seeds 2,000 requests and measures a second each;
// COUNTERSIGN_BENCH_REQUESTS sets another count:
//
//	COUNTERSIGN_BENCH_REQUESTS=10000000 go test ./cmd/countersign -run '^$' -bench IntakeAtScale -benchtime 1x -timeout 60m
func BenchmarkIntakeAtScale(b *testing.B) {
	rows := storetest.SeedSize(b, 1_000_000, 2000)
	measure := 20 * time.Second
	if testing.Short() {
		measure = time.Second
	}
	p99 := map[string]time.Duration{}
	for _, c := range []struct {
		name string
		url  func(testing.TB) string
	}{
		{"empty", storetest.NewURL},
		{"seeded", func(tb testing.TB) string {
			return storetest.SeededCopyURL(tb, storetest.Seed{Requests: rows, Live: true})
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			db, err := postgres.Open(ctx, c.url(b)+"&pool_max_conns=16")
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			svcCtx, stopService := context.WithCancel(ctx)
			defer stopService()
			svc := benchService(svcCtx, store.NewLedger(db, store.Options{}))
			for range b.N {
				in := startIntake(ctx, b, svc)
				warm := time.Now().Add(time.Second)
				waitUntil(warm.Add(measure))
				end := time.Now()
				in.stop()
				took := in.latencies(warm, end)
				if len(took) == 0 {
					b.Fatal("intake answered no intent")
				}
				p99[c.name] = pct(took, 99)
				b.ReportMetric(ms(pct(took, 50)), "p50_ms")
				b.ReportMetric(ms(p99[c.name]), "p99_ms")
				b.ReportMetric(ms(took[len(took)-1]), "max_ms")
				b.Logf("%d intents in %s", len(took), measure)
			}
		})
	}
	if p99["empty"] > 0 && p99["seeded"] > 0 {
		b.Logf("intake p99 seeded / empty: %.2f", float64(p99["seeded"])/float64(p99["empty"]))
	}
}
