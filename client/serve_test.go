package client_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/hook/apitest"
	"github.com/countersign/countersign/internal/servetest"
	"github.com/countersign/countersign/store/storetest"
)

func TestMain(m *testing.M) { servetest.Main(m) }

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

	mu      sync.Mutex
	process *servetest.Process
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
	g := &gate{t: t, provider: provider, addr: freeAddr(t), env: []string{
		"COUNTERSIGN_DATABASE_URL=" + storetest.NewURL(t),
		"COUNTERSIGN_CONFIG=" + config,
		"COUNTERSIGN_DISPATCH_SECRET=" + dispatchKey,
		"COUNTERSIGN_INBOX=on",
		"COUNTERSIGN_LOG_FORMAT=json",
		"SLACK_BOT_TOKEN=", "SLACK_APP_TOKEN=", "SLACK_SIGNING_SECRET=",
	}}
	g.start()

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

// start runs serve on the gate's address and waits until it answers.
func (g *gate) start() {
	g.t.Helper()
	p := servetest.Start(g.t, append(g.env, "COUNTERSIGN_LISTEN="+g.addr)...)
	g.mu.Lock()
	g.process = p
	g.browser = nil // a new process prints a new inbox link
	g.mu.Unlock()
}

// kill stops serve with SIGKILL, as a crash would.
func (g *gate) kill() {
	g.mu.Lock()
	p := g.process
	g.mu.Unlock()
	p.Kill()
}

func (g *gate) logText() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.process.Logs()
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
	g.mu.Lock()
	p := g.process
	g.mu.Unlock()
	p.WaitLog(`/inbox/?token=`, 10*time.Second)
	m := inboxEntry.FindStringSubmatch(p.Logs())
	if m == nil {
		g.t.Fatalf("serve logged no inbox link: %s", p.Logs())
	}
	entry := m[1]
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
