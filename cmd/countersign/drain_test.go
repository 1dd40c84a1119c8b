package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store/storetest"
)

// At the signal serve drains before it stops: /readyz answers 503 at once,
// the agent API is still served (new connections included), each answer
// closing its connection, and serve exits only after the drain delay.
func TestServeDrainsBeforeItStops(t *testing.T) {
	t.Parallel()
	const delay = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	exited := make(chan int, 1)
	env := envFrom(map[string]string{
		"COUNTERSIGN_DATABASE_URL":    storetest.NewURL(t),
		"COUNTERSIGN_CONFIG":          smokeConfig(t),
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
		"COUNTERSIGN_DRAIN_DELAY":     delay.String(),
	})
	go func() { exited <- run(ctx, []string{"serve"}, env, nil, io.Discard, logs) }()
	var base string
	for deadline := time.Now().Add(20 * time.Second); base == ""; {
		for _, line := range strings.Split(logs.String(), "\n") {
			if addr, ok := listeningAddr([]byte(line)); ok {
				base = "http://" + addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never listened: %s", logs.String())
		}
		time.Sleep(20 * time.Millisecond) // polling the log
	}
	get := func(path string) *http.Response {
		t.Helper()
		// A client of its own for each call: a new connection every time.
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+smokeToken)
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		if err != nil {
			t.Fatalf("GET %s while draining: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := get("/readyz"); resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("GET /readyz before the signal = %d (close %v)", resp.StatusCode, resp.Close)
	}

	signalled := time.Now()
	cancel()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if resp := get("/readyz"); resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz still answers 200 after the signal")
		}
		time.Sleep(10 * time.Millisecond) // polling the probe
	}
	if resp := get("/v1/tools"); resp.StatusCode != http.StatusOK || !resp.Close {
		t.Errorf("GET /v1/tools while draining = %d (close %v), want 200 closing its connection", resp.StatusCode, resp.Close)
	}
	if resp := get("/healthz"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz while draining = %d: the process is alive", resp.StatusCode)
	}
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after its drain")
	}
	if took := time.Since(signalled); took < delay {
		t.Errorf("serve exited %v after the signal, before its drain delay of %v", took.Round(time.Millisecond), delay)
	}
	if !strings.Contains(logs.String(), `"msg":"draining`) {
		t.Errorf("the drain is not logged:\n%s", logs.String())
	}
}
