package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/sandbox"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/embedded"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

const benchTool = "demo.refund"

// BenchmarkStores runs the same work on PostgreSQL and on the embedded
// store, in one run so the figures compare: intake (new intents submitted by
// 8 goroutines through the group-commit batcher, as serve wires it) and
// dispatch (approved executions burned down to succeeded against a no-op
// provider on loopback). ops/s is intents or executions per second.
//
//	go test ./cmd/countersign -run '^$' -bench Stores -benchtime 4000x
func BenchmarkStores(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"postgres", func(b *testing.B) store.Store {
			db, err := postgres.Open(context.Background(), storetest.NewURL(b))
			if err != nil {
				b.Fatal(err)
			}
			return store.NewLedger(db, store.Options{})
		}},
		{"embedded", func(b *testing.B) store.Store {
			s, err := embedded.Open(context.Background(), filepath.Join(b.TempDir(), storeFile))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Migrate(context.Background(), nil); err != nil {
				b.Fatal(err)
			}
			return store.NewLedger(s, store.Options{})
		}},
	}
	for _, s := range stores {
		b.Run(s.name+"/intake", func(b *testing.B) { benchIntake(b, s.open(b)) })
		b.Run(s.name+"/dispatch", func(b *testing.B) { benchDispatch(b, s.open(b)) })
	}
}

func benchService(ctx context.Context, db store.Store) *approvals.Service {
	batcher := store.NewIntakeBatcher(db, intakeFlushers, intakeMaxBatch)
	if err := batcher.Start(ctx); err != nil {
		panic(err)
	}
	context.AfterFunc(ctx, func() { _ = batcher.Stop(context.Background()) })
	return must(approvals.New(approvals.Config{DB: db, Batcher: batcher, Logger: slog.New(slog.DiscardHandler),
		Tools: map[string]approvals.Tool{benchTool: {Name: benchTool, Approvers: []string{"local:bench"}}}}))
}

func benchIntent(run string, step int64) approvals.Intent {
	return approvals.Intent{RunID: run, Step: json.RawMessage(fmt.Sprint(step)), Tool: benchTool,
		Effect: json.RawMessage(`{"order":"ord_1001","amount_cents":1250,"currency":"EUR"}`)}
}

func benchIntake(b *testing.B, db store.Store) {
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := benchService(ctx, db)
	var step atomic.Int64
	b.SetParallelism(4) // 8 submitters on 2 cores
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, created, err := svc.Submit(ctx, "bench", benchIntent("intake", step.Add(1))); err != nil || !created {
				b.Errorf("Submit = %v, created %v", err, created)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}

func benchDispatch(b *testing.B, db store.Store) {
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := benchService(ctx, db)
	for i := range b.N {
		req, _, err := svc.Submit(ctx, "bench", benchIntent("dispatch", int64(i)))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := svc.Decide(ctx, approvals.Decision{RequestID: req.ID, Round: 1, PayloadHash: req.PayloadHash,
			Verdict: store.VerdictApprove, DecidedBy: "local:bench", Via: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	provider := httptest.NewServer(sandbox.Noop())
	defer provider.Close()
	ex := executor.New(executor.Config{
		DB: db, Secrets: [][]byte{[]byte("bench")}, Logger: slog.New(slog.DiscardHandler), Metrics: executor.NewMetrics(nil),
		Tools: map[string]executor.Tool{benchTool: {Name: benchTool, Method: "POST", URL: provider.URL, Timeout: 10 * time.Second,
			KeyAware: true, MaxAttempts: 5, ClaimTimeout: time.Minute, ApprovalTTL: time.Hour}},
	})
	b.ResetTimer()
	start := time.Now()
	done := 0
	for done < b.N {
		n, err := ex.Drain(ctx)
		if err != nil {
			b.Fatal(err)
		}
		done += n
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
