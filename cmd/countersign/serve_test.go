package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/store/storetest"
)

// syncBuffer collects a process's log lines safely across goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

const (
	smokeToken  = "smoke-agent-token-do-not-log"
	smokeSecret = "smoke-dispatch-secret-do-not-log"
)

// startServe runs `countersign serve` in-process on a fresh database and
// returns its base URL and its log.
func startServe(t *testing.T) (string, *syncBuffer) {
	t.Helper()
	return startServeWith(t, envFrom(map[string]string{
		"COUNTERSIGN_DATABASE_URL":    storetest.NewURL(t),
		"COUNTERSIGN_CONFIG":          smokeConfig(t),
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
	}))
}

// smokeConfig writes the smoke test's configuration, one agent (smokeToken)
// and one tool, and returns its path.
func smokeConfig(t *testing.T) string {
	t.Helper()
	sum := sha256.Sum256([]byte(smokeToken))
	return writeConfig(t, fmt.Sprintf(`
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
  billing.credit:
    approvers: [U0ANA]
    dispatch: {url: "http://127.0.0.1:9/credits"}
`, hex.EncodeToString(sum[:])))
}

// startServeWith runs `countersign serve` in-process with env until the test
// ends, and returns its base URL and its output.
func startServeWith(t *testing.T, env func(string) string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	exited := make(chan int, 1)
	given := env
	env = func(k string) string {
		if v := given(k); k != "COUNTERSIGN_DRAIN_DELAY" || v != "" {
			return v
		}
		return "0" // stop when the test ends; a test that plays the drain says so
	}
	go func() { exited <- run(ctx, []string{"serve"}, env, nil, io.Discard, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-exited:
			if code != 0 {
				t.Errorf("serve exited %d: %s", code, logs.String())
			}
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop after its context ended")
		}
	})

	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(logs.String(), "\n") {
			if addr, ok := listeningAddr([]byte(line)); ok {
				return "http://" + addr, logs
			}
		}
		select {
		case code := <-exited:
			t.Fatalf("serve exited %d: %s", code, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve never listened: %s", logs.String())
	return "", nil
}

// listeningAddr returns the address of serve's "listening" log line.
func listeningAddr(line []byte) (string, bool) {
	var entry struct {
		Msg  string `json:"msg"`
		Addr string `json:"addr"`
	}
	if json.Unmarshal(line, &entry) != nil || entry.Msg != "listening" {
		return "", false
	}
	return entry.Addr, true
}

func TestServeEndToEnd(t *testing.T) {
	t.Parallel()
	base, logs := startServe(t)
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz = %d", code)
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("/readyz = %d", code)
	}

	req, _ := http.NewRequest(http.MethodPost, base+"/v1/requests", strings.NewReader(
		`{"run_id":"r-7f3a","step":6,"tool":"billing.credit","effect":{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}}`))
	req.Header.Set("Authorization", "Bearer "+smokeToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || !strings.Contains(string(body), "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c") {
		t.Fatalf("POST = %d %s", resp.StatusCode, body)
	}

	code, metrics := get("/metrics")
	if code != 200 || !strings.Contains(metrics, `countersign_intake_total{outcome="created"} 1`) {
		t.Errorf("/metrics = %d, lacks the intake counter", code)
	}
	if !strings.Contains(metrics, "countersign_sweep_leader 1") {
		t.Error("/metrics lacks countersign_sweep_leader 1: the one process on the embedded store leads")
	}
	if !strings.Contains(logs.String(), "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c") {
		t.Errorf("the log does not name the request's key")
	}
	for _, secret := range []string{smokeToken, smokeSecret} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log contains a secret")
		}
	}
}

func TestServeRefusesAnInvalidConfiguration(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"serve"}, envFrom(map[string]string{
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_DATA_DIR":        t.TempDir(),
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
		"COUNTERSIGN_INBOX":           "maybe",
	}), nil, io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), `COUNTERSIGN_INBOX is "maybe"`) {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), smokeSecret) {
		t.Errorf("the error output contains the dispatch secret")
	}
}
