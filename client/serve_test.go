package client_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/hook/apitest"
	"github.com/countersign/countersign/store/storetest"
)

// binary is the countersign binary the tests run, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "countersign-client-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "countersign")
	build := exec.Command("go", "build", "-o", binary, "github.com/countersign/countersign/cmd/countersign")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building countersign:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const (
	agentToken  = "client-test-agent-token"
	dispatchKey = "client-test-dispatch-secret"
	// callbackSecret signs the callbacks to the test's agent.
	callbackSecret = "client-test-callback-secret"
	creditSchema   = `{"type": "object", "required": ["invoice", "amount_cents", "currency"], "additionalProperties": false,
      "properties": {"invoice": {"type": "string"}, "amount_cents": {"type": "integer", "minimum": 1}, "currency": {"enum": ["USD", "EUR"]}}}`
)

// gate is a countersign serve process on a scratch PostgreSQL database,
// dispatching to a fake provider, with the review inbox on.
type gate struct {
	t        *testing.T
	provider *providertest.Provider
	env      []string
	addr     string // host:port serve listens on
	// URL is where the client under test calls: a proxy in front of serve
	// that checks every answer against the OpenAPI document.
	URL string

	mu   sync.Mutex
	cmd  *exec.Cmd
	logs *bytes.Buffer
	// browser is the reviewer's session in the running serve's inbox.
	browser *http.Client
}

// startGate starts serve and its provider.
func startGate(t *testing.T) *gate {
	t.Helper()
	return startGateWith(t, "")
}

// startGateWith starts serve with the agent's callback at callbackURL, if
// set, signed with callbackSecret.
func startGateWith(t *testing.T, callbackURL string) *gate {
	t.Helper()
	callback := ""
	if callbackURL != "" {
		callback = "\n    callback: {url: \"" + callbackURL + "\", secret: " + callbackSecret + "}\ncallbacks: {retry_base: 100ms, poll: 100ms}"
	}
	provider := providertest.New()
	provider.Secret = []byte(dispatchKey)
	providerSrv := providertest.Start(t, provider)
	sum := sha256.Sum256([]byte(agentToken))
	config := filepath.Join(t.TempDir(), "countersign.yml")
	if err := os.WriteFile(config, []byte(`
agents:
  - name: client-agent
    token_sha256: `+hex.EncodeToString(sum[:])+callback+`
tools:
  billing.credit:
    description: Credit an invoice, in cents.
    approvers: [local:reviewer]
    dispatch: {method: POST, url: "`+providerSrv.URL+`/credits", timeout: 5s}
    key_aware: true
    verify: {url: "`+providerSrv.URL+`/objects?key={key}"}
    claim_timeout: 30s
    reject_reason: optional
    tiers: [{when: {field: amount_cents, gt: 1000000}, approvals: 2, approvers: [local:reviewer, local:second]}]
    effect_schema: `+strings.Join(strings.Fields(creditSchema), " ")+`
  crm.note:
    approvers: [local:reviewer]
    dispatch: {method: POST, url: "`+providerSrv.URL+`/notes"}
    reversible: true
`), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &gate{t: t, provider: provider, addr: freeAddr(t), env: append(os.Environ(),
		"COUNTERSIGN_DATABASE_URL="+storetest.NewURL(t),
		"COUNTERSIGN_CONFIG="+config,
		"COUNTERSIGN_DISPATCH_SECRET="+dispatchKey,
		"COUNTERSIGN_INBOX=on",
		"COUNTERSIGN_LOG_FORMAT=json",
		"SLACK_BOT_TOKEN=", "SLACK_APP_TOKEN=", "SLACK_SIGNING_SECRET=",
	)}
	g.start()
	t.Cleanup(g.stop)

	target, _ := url.Parse("http://" + g.addr)
	doc := apitest.Load(t, hook.OpenAPIDocument())
	reverse := httputil.NewSingleHostReverseProxy(target)
	reverse.ErrorLog = log.New(io.Discard, "", 0) // a client that gave up is not news
	proxy := httptest.NewServer(apitest.Conform(t, doc, nil, reverse))
	t.Cleanup(proxy.Close)
	g.URL = proxy.URL
	return g
}

// freeAddr returns a loopback address nothing listens on, so a restarted
// serve can take the same one.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs serve and waits until it answers.
func (g *gate) start() {
	g.t.Helper()
	g.mu.Lock()
	g.logs = &bytes.Buffer{}
	g.browser = nil // a new process prints a new inbox link
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(g.env, "COUNTERSIGN_LISTEN="+g.addr)
	out, err := cmd.StderrPipe()
	if err != nil {
		g.t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	g.cmd = cmd
	logs := g.logs
	g.mu.Unlock()
	go func() {
		scanner := bufio.NewScanner(out)
		scanner.Buffer(make([]byte, 1<<20), 1<<20)
		for scanner.Scan() {
			g.mu.Lock()
			logs.Write(append(scanner.Bytes(), '\n'))
			g.mu.Unlock()
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get("http://" + g.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("serve never answered: %s", g.logText())
		}
		time.Sleep(20 * time.Millisecond) // polling serve's port until it binds
	}
}

// kill stops serve with SIGKILL, as a crash would.
func (g *gate) kill() {
	g.mu.Lock()
	cmd := g.cmd
	g.cmd = nil
	g.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	}
}

// stop ends serve with SIGTERM and waits for it.
func (g *gate) stop() {
	g.mu.Lock()
	cmd := g.cmd
	g.cmd = nil
	g.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (g *gate) logText() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.logs.String()
}

var inboxEntry = regexp.MustCompile(`"url":"(http://[^"]+/inbox/\?token=[^"]+)"`)

// approve decides the request as the local reviewer, through the inbox of
// the serve process now running, as a person would.
func (g *gate) approve(id, payloadHash string) {
	g.t.Helper()
	g.vote(id, payloadHash, "approve", "")
}

// vote records the local reviewer's verdict on the request's first round,
// with its reason, through the inbox.
func (g *gate) vote(id, payloadHash, verdict, reason string) {
	g.t.Helper()
	form := url.Values{"request_id": {id}, "round": {"1"}, "payload_hash": {payloadHash}, "verdict": {verdict}, "reason": {reason}}
	resp, err := g.inbox().Post("http://"+g.addr+"/inbox/decide", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		g.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		g.t.Fatalf("voting %s in the inbox answered %d", verdict, resp.StatusCode)
	}
}

// inbox returns the reviewer's browser, in the inbox of the serve process
// now running: the first call opens the link serve logged, which works once.
func (g *gate) inbox() *http.Client {
	g.t.Helper()
	g.mu.Lock()
	browser := g.browser
	g.mu.Unlock()
	if browser != nil {
		return browser
	}
	var entry string
	for deadline := time.Now().Add(10 * time.Second); entry == ""; {
		if m := inboxEntry.FindStringSubmatch(g.logText()); m != nil {
			entry = m[1]
		} else if time.Now().After(deadline) {
			g.t.Fatalf("serve logged no inbox link: %s", g.logText())
		} else {
			time.Sleep(20 * time.Millisecond) // polling serve's log
		}
	}
	jar, _ := cookiejar.New(nil)
	browser = &http.Client{Timeout: 10 * time.Second, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := browser.Get(entry)
	if err != nil {
		g.t.Fatal(err)
	}
	resp.Body.Close()
	g.mu.Lock()
	g.browser = browser
	g.mu.Unlock()
	return browser
}

// decodeJSON decodes raw into v or fails the test.
func decodeJSON(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}
