package approvals

import (
	"fmt"
	"sync/atomic"
	"testing"
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
// serve runs it) without and with an effect_schema on the tool, in the same
// run: the schema's cost is the difference (docs/BENCHMARKS.md).
func BenchmarkSubmitEffectSchema(b *testing.B) {
	for _, schema := range []bool{false, true} {
		b.Run(fmt.Sprintf("schema=%v", schema), func(b *testing.B) {
			bundle := setup(b)
			if schema {
				bundle.withSchema(b)
			}
			var n atomic.Int64
			b.SetParallelism(4)
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
