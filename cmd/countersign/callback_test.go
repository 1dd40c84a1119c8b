package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/callback"
	"github.com/countersign/countersign/internal/servetest"
	"github.com/countersign/countersign/internal/signature"
	"github.com/countersign/countersign/store/storetest"
)

// envServeProcess makes the test binary run `countersign serve` as a
// process of its own, for tests that kill it.
const envServeProcess = "COUNTERSIGN_TEST_SERVE_PROCESS"

func TestMain(m *testing.M) {
	// First: serve starts the upstream with its own environment, the
	// serve process's variable included.
	if os.Getenv(envUpstreamProcess) != "" {
		os.Exit(runCountingUpstream())
	}
	if os.Getenv(envServeProcess) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, []string{"serve"}, os.Getenv, nil, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	if os.Getenv(envMCPProcess) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, []string{"mcp", "--call-timeout", mcpCallTimeout}, os.Getenv, os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	code := servetest.Run(m)
	if fakeProvider.path != "" {
		os.RemoveAll(filepath.Dir(fakeProvider.path))
	}
	os.Exit(code)
}

// serveProcess is `countersign serve` in a process of its own.
type serveProcess struct {
	cmd  *exec.Cmd
	logs *syncBuffer
	base string
	// stderr is the read end of serve's standard error; closing it is
	// what a log reader that dies does to serve.
	stderr io.Closer
}

// startServeProcess starts serve with env (added to the test's own) and
// waits until it listens.
func startServeProcess(t testing.TB, env map[string]string) *serveProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envServeProcess+"=1")
	if _, ok := env["COUNTERSIGN_DRAIN_DELAY"]; !ok {
		// Stop at the signal: a test that plays the drain says so.
		cmd.Env = append(cmd.Env, "COUNTERSIGN_DRAIN_DELAY=0")
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{cmd: cmd, logs: &syncBuffer{}, stderr: stderr}
	listening := make(chan string, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		scanner := bufio.NewScanner(stderr)
		scanner.Buffer(make([]byte, 1<<20), 1<<20)
		for scanner.Scan() {
			line := scanner.Bytes()
			_, _ = p.logs.Write(append(append([]byte(nil), line...), '\n'))
			if addr, ok := listeningAddr(line); ok {
				listening <- addr
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
			}
		}
	})
	select {
	case addr := <-listening:
		p.base = "http://" + addr
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("serve never listened: %s", p.logs.String())
	}
	return p
}

// kill ends the process with SIGKILL: nothing it runs gets to finish.
func (p *serveProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// agentEndpoint is an agent's callback URL: it checks each callback's
// signature and counts deliveries per delivery id. While hold is set it
// answers nothing, and tells held. Each delivery closes arrived and
// replaces it, so waitFor wakes on deliveries rather than polling.
type agentEndpoint struct {
	*httptest.Server
	secret  []byte
	mu      sync.Mutex
	seen    map[string]int
	bad     int
	bodies  []string
	events  []string
	hold    bool
	held    chan struct{}
	arrived chan struct{}
}

func newAgentEndpoint(t *testing.T, secret string) *agentEndpoint {
	e := &agentEndpoint{secret: []byte(secret), seen: map[string]int{}, held: make(chan struct{}, 16), arrived: make(chan struct{})}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		if signature.VerifyRequest(e.secret, r.Header.Get(signature.Header), signature.RequestOf(r), body, time.Now(), 5*time.Minute) != nil {
			e.bad++
		}
		e.seen[r.Header.Get(callback.DeliveryHeader)]++
		e.bodies = append(e.bodies, string(body))
		e.events = append(e.events, r.Header.Get(callback.EventHeader))
		close(e.arrived)
		e.arrived = make(chan struct{})
		hold := e.hold
		e.mu.Unlock()
		if hold {
			e.held <- struct{}{}
			<-r.Context().Done() // the caller goes away (it is killed)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *agentEndpoint) setHold(hold bool) {
	e.mu.Lock()
	e.hold = hold
	e.mu.Unlock()
}

// waitFor checks cond after each delivery e receives until it holds, or
// fails the test after 45 s.
func (e *agentEndpoint) waitFor(t *testing.T, what string, cond func(e *agentEndpoint) bool) {
	t.Helper()
	timeout := time.After(45 * time.Second)
	for {
		e.mu.Lock()
		ok, arrived := cond(e), e.arrived
		e.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-arrived:
		case <-timeout:
			t.Fatalf("the agent endpoint never saw %s", what)
		}
	}
}

// A serve process killed (SIGKILL) while its callback was in flight, after
// the transition committed, leaves the delivery to the next process: the
// agent receives it again under the same delivery id, signed, and a redrive
// sends it once more.
func TestCallbackSurvivesKillBetweenCommitAndDelivery(t *testing.T) {
	t.Parallel()
	forEachServeStore(t, testCallbackSurvivesKill)
}

// forEachServeStore runs test on serve with each store, in parallel: given
// the environment that selects it (PostgreSQL on a fresh database, or the
// embedded store in a fresh data directory).
func forEachServeStore(t *testing.T, test func(t *testing.T, storeEnv map[string]string)) {
	for _, store := range []struct {
		name string
		env  func(t *testing.T) map[string]string
	}{
		{"postgres", func(t *testing.T) map[string]string {
			return map[string]string{"COUNTERSIGN_DATABASE_URL": storetest.NewURL(t)}
		}},
		{"embedded", func(t *testing.T) map[string]string {
			return map[string]string{"COUNTERSIGN_DATABASE_URL": "", "COUNTERSIGN_DATA_DIR": t.TempDir()}
		}},
	} {
		t.Run(store.name, func(t *testing.T) {
			t.Parallel()
			test(t, store.env(t))
		})
	}
}

func testCallbackSurvivesKill(t *testing.T, storeEnv map[string]string) {
	const (
		token  = "kit-agent-token-do-not-log"
		secret = "kit-callback-secret-do-not-log"
	)
	endpoint := newAgentEndpoint(t, secret)
	endpoint.setHold(true)
	sum := sha256.Sum256([]byte(token))
	cfgPath := writeConfig(t, fmt.Sprintf(`
agents:
  - name: kit-agent
    token_sha256: %s
    callback: {url: %q, secret: "${KIT_CALLBACK_SECRET}"}
tools:
  billing.credit:
    approvers: [U0ANA]
    dispatch: {url: "http://127.0.0.1:9/credits"}
callbacks: {timeout: 1s, poll: 50ms, retry_base: 50ms}
`, hex.EncodeToString(sum[:]), endpoint.URL+"/hooks/countersign"))
	env := map[string]string{
		"COUNTERSIGN_CONFIG":          cfgPath,
		"COUNTERSIGN_DISPATCH_SECRET": "kit-dispatch-secret",
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
		"KIT_CALLBACK_SECRET":         secret,
		"SLACK_BOT_TOKEN":             "",
	}
	for k, v := range storeEnv {
		env[k] = v
	}
	first := startServeProcess(t, env)
	call := func(base, method, path string, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	status, created := call(first.base, http.MethodPost, "/v1/requests",
		`{"run_id":"r-kit","step":1,"tool":"billing.credit","effect":{"invoice":"inv_1","amount_cents":100,"currency":"USD"}}`)
	if status != http.StatusCreated {
		t.Fatalf("POST = %d %v", status, created)
	}
	key := created["key"].(string)
	if status, v := call(first.base, http.MethodPost, "/v1/requests/"+key+"/cancel", ""); status != 200 || v["settled"] != true {
		t.Fatalf("cancel = %d %v", status, v)
	}

	// The cancel committed its callback; the first attempt is in flight.
	select {
	case <-endpoint.held:
	case <-time.After(30 * time.Second):
		t.Fatalf("the callback was never sent: %s", first.logs.String())
	}
	first.kill(t)
	endpoint.setHold(false)

	second := startServeProcess(t, env)
	endpoint.waitFor(t, "the delivery again", func(e *agentEndpoint) bool {
		for _, n := range e.seen {
			if n >= 2 {
				return true
			}
		}
		return false
	})
	endpoint.mu.Lock()
	var delivery string
	for id := range endpoint.seen {
		delivery = id
	}
	if len(endpoint.seen) != 1 || endpoint.bad != 0 || len(delivery) != 36 {
		t.Errorf("deliveries %v, %d badly signed; want one delivery id, every one signed", endpoint.seen, endpoint.bad)
	}
	for i, body := range endpoint.bodies {
		var v struct {
			Key      string `json:"key"`
			Status   string `json:"status"`
			Settled  bool   `json:"settled"`
			Callback struct {
				State string `json:"state"`
			} `json:"callback"`
		}
		if err := json.Unmarshal([]byte(body), &v); err != nil || v.Key != key || v.Status != "cancelled" || !v.Settled ||
			v.Callback.State != "delivering" {
			t.Errorf("callback body %s, %v", body, err)
		}
		if endpoint.events[i] != "request.settled" {
			t.Errorf("callback event %q", endpoint.events[i])
		}
	}
	endpoint.mu.Unlock()

	// The representation shows it delivered, on the second attempt.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, v := call(second.base, http.MethodGet, "/v1/requests/"+key, "")
		cb, _ := v["callback"].(map[string]any)
		if cb != nil && cb["state"] == "delivered" {
			if cb["attempts"] != float64(2) || cb["last_status"] != float64(http.StatusNoContent) {
				t.Errorf("callback = %v; want delivered on attempt 2 with 204", cb)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the callback never shows delivered: %v", v)
		}
		time.Sleep(25 * time.Millisecond)
	}

	// A redrive sends the same delivery once more.
	if status, v := call(second.base, http.MethodPost, "/v1/requests/"+key+"/redrive", ""); status != 200 {
		t.Fatalf("redrive = %d %v", status, v)
	}
	endpoint.waitFor(t, "the redriven delivery", func(e *agentEndpoint) bool { return e.seen[delivery] >= 3 })
	if len(endpoint.seen) != 1 {
		t.Errorf("deliveries after the redrive %v; want the one delivery id", endpoint.seen)
	}

	resp, err := http.Get(second.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `countersign_callback_attempts_total{event="request.settled",outcome="delivered"}`) ||
		!strings.Contains(string(metrics), "countersign_callback_backlog") {
		t.Errorf("/metrics lacks the callback metrics")
	}
	for _, p := range []*serveProcess{first, second} {
		for _, s := range []string{token, secret} {
			if strings.Contains(p.logs.String(), s) {
				t.Errorf("serve's log holds a secret")
			}
		}
	}
}
