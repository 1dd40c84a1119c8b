package hook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/embedded"
	"github.com/countersign/countersign/store/storetest"
)

// tcpProxy forwards loopback connections to a server until it is killed: a
// database host that goes away, and comes back on the same address.
type tcpProxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener // nil while killed
	conns  map[net.Conn]struct{}
}

func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	p := &tcpProxy{target: target, conns: map[net.Conn]struct{}{}}
	p.listen(t, "127.0.0.1:0")
	p.addr = p.ln.Addr().String()
	t.Cleanup(p.kill)
	return p
}

func (p *tcpProxy) listen(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("proxy listening on %s: %v", addr, err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

func (p *tcpProxy) pipe(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	alive := p.ln != nil
	if alive {
		p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	}
	p.mu.Unlock()
	if !alive {
		client.Close()
		server.Close()
		return
	}
	go func() {
		_, _ = io.Copy(server, client)
		server.Close()
		client.Close()
	}()
	_, _ = io.Copy(client, server)
	client.Close()
	server.Close()
}

// kill stops listening and cuts every connection through the proxy.
func (p *tcpProxy) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// restore listens again on the address it had.
func (p *tcpProxy) restore(t *testing.T) { p.listen(t, p.addr) }

// expectUnavailable checks a 503 unavailable answer with its Retry-After.
func expectUnavailable(t *testing.T, what string, r response) {
	t.Helper()
	if code, _ := r.errorCode(t); r.status != http.StatusServiceUnavailable || code != approvals.CodeUnavailable || r.header.Get("Retry-After") != "2" {
		t.Errorf("%s = %d %s Retry-After %q, want 503 %s Retry-After 2", what, r.status, r.body, r.header.Get("Retry-After"), approvals.CodeUnavailable)
	}
}

// While PostgreSQL cannot be reached the hook answers 503 unavailable with
// Retry-After, never 500; once it is back, the agent's retry of the same
// intent is stored and nothing stored before is lost.
func TestHookDatabaseOutageAnswersUnavailable(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(storetest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := startProxy(t, u.Host)
	u.Host = proxy.addr
	b := setupOn(t, u.String())

	before := b.post(t, vectorBody)
	if before.status != http.StatusCreated {
		t.Fatalf("create before the outage = %d %s", before.status, before.body)
	}
	stored := before.view(t)

	proxy.kill()
	during := strings.Replace(vectorBody, "4200", "4300", 1)
	expectUnavailable(t, "create", b.post(t, during))
	expectUnavailable(t, "replay", b.post(t, vectorBody))
	expectUnavailable(t, "get", b.do(t, http.MethodGet, "/v1/requests/"+stored.Key, testToken, nil, nil))
	expectUnavailable(t, "long-poll", b.do(t, http.MethodGet, "/v1/requests/"+stored.ID+"?wait=5s", testToken, nil, nil))
	expectUnavailable(t, "cancel", b.do(t, http.MethodPost, "/v1/requests/"+stored.ID+"/cancel", testToken, nil, nil))

	proxy.restore(t)
	// The agent retries as Retry-After says; a pooled connection cut by the
	// outage may still answer 503 once before a fresh one serves.
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var after response
	for {
		after = b.post(t, during)
		if after.status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
		expectUnavailable(t, "create while reconnecting", after)
		<-tick.C
	}
	if after.status != http.StatusCreated {
		t.Fatalf("the same intent after the outage = %d %s, want 201", after.status, after.body)
	}
	got := b.do(t, http.MethodGet, "/v1/requests/"+stored.Key, testToken, nil, nil)
	if got.status != http.StatusOK || got.view(t).ID != stored.ID || got.view(t).Status != "pending" {
		t.Errorf("request stored before the outage = %d %s", got.status, got.body)
	}
	b.expectCounts(t, map[string]int{
		`SELECT count(*) FROM requests`: 2,
		`SELECT count(*) FROM events`:   2,
	})
}

// The embedded store closed under the hook (as at shutdown) is unavailable
// too.
func TestHookClosedEmbeddedStoreAnswersUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := embedded.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx, nil); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := approvalstest.New(t, approvals.Config{DB: store.NewLedger(s, store.Options{}), Tools: map[string]approvals.Tool{"billing.credit": {Name: "billing.credit", Approvers: []string{approverA}, RequestTTL: time.Hour}}, Logger: logger})
	sum := sha256.Sum256([]byte(testToken))
	agent, err := ParseAgent("billing-agent", hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	notifier, _, _ := s.Notifier(logger)
	server := httptest.NewServer(conforming(t, NewHandler(svc, Agents{agent}, notifier, logger, NewMetrics(prometheus.NewRegistry()))))
	defer server.Close()
	b := &bundle{server: server, ctx: ctx}

	created := b.post(t, vectorBody)
	if created.status != http.StatusCreated {
		t.Fatalf("create = %d %s", created.status, created.body)
	}
	s.Close()
	expectUnavailable(t, "create", b.post(t, strings.Replace(vectorBody, "4200", "4300", 1)))
	expectUnavailable(t, "get", b.do(t, http.MethodGet, "/v1/requests/"+created.view(t).Key, testToken, nil, nil))
}
