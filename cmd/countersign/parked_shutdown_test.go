package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store/storetest"
)

// SIGTERM answers a parked long-poll at once, with its request as it
// stands, and closes its connection: the HTTP server does not track a
// parked connection, serve does.
func TestSIGTERMAnswersParkedLongPolls(t *testing.T) {
	t.Parallel()
	env := quorumEnv(t, storetest.NewURL(t), bottest.New(t), `  billing.credit:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/credits", timeout: 10s}
    key_aware: false
`)
	p := startServeProcess(t, env)
	req := postIntent(t, p.base,
		`{"run_id":"r-park","step":1,"tool":"billing.credit","effect":{"invoice":"inv_p","amount_cents":700,"currency":"EUR"},"summary":"Credit 7.00 EUR"}`)
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/requests/%s?wait=60s HTTP/1.1\r\nHost: countersign\r\nAuthorization: Bearer %s\r\n\r\n", req.ID, smokeToken)
	for deadline := time.Now().Add(10 * time.Second); !parkedNow(t, p.base); {
		if time.Now().After(deadline) {
			t.Fatalf("the long-poll never parked:\n%s", p.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	p.stop(t)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("serve took %s to stop with a parked long-poll", took)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the parked long-poll got no answer: %v\n%s", err, p.logs.String())
	}
	body, _ := io.ReadAll(resp.Body)
	var v struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(body, &v); err != nil || resp.StatusCode != 200 || v.ID != req.ID || v.Status != "pending" || !resp.Close {
		t.Errorf("parked long-poll on SIGTERM = %d (close %v) %s", resp.StatusCode, resp.Close, body)
	}
}

// parkedNow reports whether serve's metrics count a parked long-poll.
func parkedNow(t *testing.T, base string) bool {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return strings.Contains(string(body), "\ncountersign_long_polls_parked 1\n")
}
