package hook

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkWaiterMemory: what a long-poll holds while it waits, in this
// process and after two garbage collections, so only what waiters keep
// alive is counted (cmd/waitbench measures a real serve, garbage and all).
// 2,000 long-polls on one pending request of PostgreSQL, each on its own
// connection, behind a mux as serve mounts the hook. It reports heap and
// stack bytes per waiter, net/http's connection included.
//
// With -short (the smoke run in make test) it holds 50.
func BenchmarkWaiterMemory(b *testing.B) {
	n := 2000
	if testing.Short() {
		n = 50
	}
	bb := setup(b)
	req, _, err := bb.svc.Submit(bb.ctx, "billing-agent", newIntent(nil))
	if err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256([]byte(testToken))
	agent, err := ParseAgent("billing-agent", hex.EncodeToString(sum[:]))
	if err != nil {
		b.Fatal(err)
	}
	h := NewHandler(bb.svc, Agents{agent}, bb.listener, slog.New(slog.NewJSONHandler(io.Discard, nil)), NewMetrics(prometheus.NewRegistry()))
	mux := http.NewServeMux()
	mux.Handle("/v1/", h)
	server := httptest.NewServer(mux)
	defer server.Close()
	for range b.N {
		heap, stack := inUse()
		conns := make([]net.Conn, n)
		for i := range conns {
			c, err := net.Dial("tcp", server.Listener.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			conns[i] = c
			fmt.Fprintf(c, "GET /v1/requests/%s?wait=60s HTTP/1.1\r\nHost: countersign\r\nAuthorization: Bearer %s\r\n\r\n", req.ID, testToken)
		}
		for deadline := time.Now().Add(time.Minute); bb.listener.(waiter).Waiting(req.ID) < n; {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d long-polls wait after a minute", bb.listener.(waiter).Waiting(req.ID), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
		heapWith, stackWith := inUse()
		b.ReportMetric(float64(heapWith-heap)/float64(n), "heap-B/waiter")
		b.ReportMetric(float64(stackWith-stack)/float64(n), "stack-B/waiter")
		for _, c := range conns {
			c.Close()
		}
		for deadline := time.Now().Add(time.Minute); bb.listener.(waiter).Waiting(req.ID) > 0; {
			if time.Now().After(deadline) {
				b.Fatal("closed long-polls still wait after a minute")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// inUse returns the heap and stack bytes in use after two collections: the
// first frees the garbage, the second the stacks of goroutines that ended.
func inUse() (heap, stack int64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc), int64(ms.StackInuse)
}
