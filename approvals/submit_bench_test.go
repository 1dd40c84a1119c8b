package approvals

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkSubmitNew measures new-intent intake without HTTP, with and without
// group commit, at the concurrency set by -cpu × RunParallel's default.
func BenchmarkSubmitNew(b *testing.B) {
	for _, batched := range []bool{false, true} {
		b.Run(fmt.Sprintf("batched=%v", batched), func(b *testing.B) {
			bundle := setup(b)
			if !batched {
				bundle.svc.Batcher = nil
			}
			var n atomic.Int64
			b.SetParallelism(4) // 4 × GOMAXPROCS goroutines
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					run := fmt.Sprintf("bench-%d", n.Add(1))
					if _, created, err := bundle.svc.Submit(bundle.ctx, "billing-agent", newIntent(&intentOpts{RunID: &run})); err != nil || !created {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkSubmitEffectSchema is new-intent intake (group-committed, as
// serve runs it) to a tool without and to a tool with an effect_schema, the
// two interleaved in every goroutine of one run, so that the load of a
// shared machine falls on both alike. It reports each one's mean latency
// and their ratio, schema/plain (docs/BENCHMARKS.md: within 1.10).
func BenchmarkSubmitEffectSchema(b *testing.B) {
	bundle := setup(b)
	plain := bundle.svc.Tools["billing.credit"]
	checked := plain
	checked.Name, checked.EffectSchema = "billing.checked", mustSchema(b, creditSchema)
	bundle.svc.Tools = map[string]Tool{plain.Name: plain, checked.Name: checked}
	var n atomic.Int64
	var spent [2]atomic.Int64 // nanoseconds: plain, checked
	var count [2]atomic.Int64
	b.SetParallelism(4) // 4 × GOMAXPROCS goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			kind := int(i % 2)
			run, tool := fmt.Sprintf("bench-%d", i), []string{plain.Name, checked.Name}[kind]
			start := time.Now()
			if _, created, err := bundle.svc.Submit(bundle.ctx, "billing-agent", newIntent(&intentOpts{RunID: &run, Tool: &tool})); err != nil || !created {
				b.Fatal(err)
			}
			spent[kind].Add(int64(time.Since(start)))
			count[kind].Add(1)
		}
	})
	if count[0].Load() > 0 && count[1].Load() > 0 {
		plainMean := float64(spent[0].Load()) / float64(count[0].Load())
		checkedMean := float64(spent[1].Load()) / float64(count[1].Load())
		b.ReportMetric(plainMean, "plain-ns/submit")
		b.ReportMetric(checkedMean, "schema-ns/submit")
		b.ReportMetric(checkedMean/plainMean, "schema/plain")
	}
}

// BenchmarkEffectSchemaCheck is the check alone, on the billing.credit
// effect: what the schema adds to each intent's CPU.
func BenchmarkEffectSchemaCheck(b *testing.B) {
	schema := mustSchema(b, creditSchema)
	effect := []byte(`{"amount_cents":4200,"currency":"USD","invoice":"inv_8841"}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := schema.Check(effect); err != nil {
			b.Fatal(err)
		}
	}
}
