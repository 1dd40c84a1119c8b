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
