package hook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// BenchmarkIntake is POST /v1/requests through the hook's handler, in
// process, on PostgreSQL with group commit as serve runs it: new intents,
// and replays of stored ones. -benchmem counts what one intent allocates
// in serve, from the body read to the answer written (the HTTP server's
// own work aside).
func BenchmarkIntake(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	db, err := postgres.Open(ctx, storetest.NewURL(b)+"&pool_max_conns=8")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	ledger := store.NewLedger(db, store.Options{})
	batcher := store.NewIntakeBatcher(ledger, 2, 16)
	if err := batcher.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = batcher.Stop(context.Background()) })
	logger := slog.New(slog.DiscardHandler)
	svc := approvalstest.New(b, approvals.Config{DB: ledger, Logger: logger, Batcher: batcher, Tools: map[string]approvals.Tool{
		"billing.credit": {Name: "billing.credit", Approvers: []string{approverA}, RequestTTL: time.Hour},
	}})
	sum := sha256.Sum256([]byte(testToken))
	agent, err := ParseAgent("billing-agent", hex.EncodeToString(sum[:]))
	if err != nil {
		b.Fatal(err)
	}
	notifier, _, _ := db.Notifier(logger)
	h := NewHandler(svc, Agents{agent}, notifier, logger, NewMetrics(prometheus.NewRegistry()))
	body := func(run string) string {
		return `{"run_id":"` + run + `","step":1,"tool":"billing.credit","summary":"credit a customer",` +
			`"effect":{"customer_id":"cus_4QFJOjw2pOmAGJ","amount_cents":1250,"currency":"usd",` +
			`"reason":"duplicate charge on invoice in_1NqTQk","lines":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}]}}`
	}
	post := func(b *testing.B, payload string, want int) {
		r := httptest.NewRequest(http.MethodPost, "/v1/requests", strings.NewReader(payload))
		r.Header.Set("Authorization", "Bearer "+testToken)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			b.Fatalf("POST = %d, want %d: %s", w.Code, want, w.Body)
		}
	}
	var n atomic.Int64
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				post(b, body(fmt.Sprint("bench-", n.Add(1))), http.StatusCreated)
			}
		})
	})
	b.Run("replay", func(b *testing.B) {
		stored := n.Load()
		var i atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				post(b, body(fmt.Sprint("bench-", 1+i.Add(1)%stored)), http.StatusOK)
			}
		})
	})
}
