package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// nudgeCluster is a PostgreSQL database, a fake Slack, and the serve
// processes that share them, with a tool that reminds after 2s and
// escalates to S0ONCALL after 4s.
type nudgeCluster struct {
	url    string
	pg     *postgres.Driver
	db     store.Store
	fake   *bottest.Slack
	config string
	review *approvals.Service
}

const (
	nudgeTool    = "billing.credit"
	nudgeChannel = "C0BILLING"
)

func newNudgeCluster(t *testing.T) *nudgeCluster {
	t.Helper()
	c := &nudgeCluster{url: storetest.NewURL(t), fake: bottest.New(t)}
	d, err := postgres.Open(context.Background(), c.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	c.pg, c.db = d, store.NewLedger(d, store.Options{})
	sum := sha256.Sum256([]byte(smokeToken))
	c.config = writeConfig(t, fmt.Sprintf(`
executor:
  reminder_schedule: "@every 1s"
  card_schedule: "@every 1s"
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
  %s:
    channel: %s
    approvers: [U0ANA, S0FINANCE]
    dispatch: {url: "http://127.0.0.1:9/credits"}
    request_ttl: 1h
    remind_after: 2s
    escalate_after: 4s
    escalate_to: [S0ONCALL]
`, hex.EncodeToString(sum[:]), nudgeTool, nudgeChannel))
	c.review = approvalstest.New(t, approvals.Config{DB: c.db, Logger: slog.New(slog.DiscardHandler),
		Tools: map[string]approvals.Tool{nudgeTool: {Name: nudgeTool, Channel: nudgeChannel, Approvers: []string{"U0ANA", "S0FINANCE"}, RequestTTL: time.Hour}}})
	return c
}

// start runs serve in a process of its own and waits until it listens.
func (c *nudgeCluster) start(t *testing.T) *serveProcess {
	t.Helper()
	p := startServeProcess(t, map[string]string{
		"COUNTERSIGN_DATABASE_URL":    c.url,
		"COUNTERSIGN_CONFIG":          c.config,
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
		"COUNTERSIGN_LOG_FORMAT":      "json",
		"COUNTERSIGN_INBOX":           "off",
		"SLACK_BOT_TOKEN":             "xoxb-test",
		"SLACK_SIGNING_SECRET":        "signing-secret",
		"COUNTERSIGN_SLACK_API_URL":   c.fake.URL(),
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve output:\n%s", p.logs.String())
		}
	})
	return p
}

// metrics returns the samples of the process's /metrics, by name with labels.
func (p *serveProcess) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	return metricsAt(t, p.base)
}

// metricsAt scrapes base's /metrics into its samples by name.
func metricsAt(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	samples := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			samples[name] = v
		}
	}
	return samples
}

func (c *nudgeCluster) submit(t *testing.T, n int) store.Request {
	t.Helper()
	req, _, err := c.review.Submit(context.Background(), "smoke-agent", approvals.Intent{
		RunID: "r", Step: json.RawMessage(strconv.Itoa(n)), Tool: nudgeTool,
		Effect: json.RawMessage(fmt.Sprintf(`{"invoice":"inv_%d"}`, n)), Summary: "Credit",
	})
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// replies returns the texts in the thread of a request's first card.
func (c *nudgeCluster) replies(t *testing.T, req store.Request) []string {
	t.Helper()
	card, err := c.db.CardFor(context.Background(), req.ID, 1, "slack")
	if err != nil {
		return nil
	}
	var texts []string
	channel, ts, _ := strings.Cut(card.Ref, "/") // Slack's ref
	for _, m := range c.fake.Replies(channel, ts) {
		texts = append(texts, m.Text)
	}
	return texts
}

func (c *nudgeCluster) events(t *testing.T, req store.Request, kind string) int {
	t.Helper()
	events, err := c.db.EventsFor(context.Background(), req.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events {
		if string(e.Kind) == kind {
			n++
		}
	}
	return n
}

// threadPosts counts the chat.postMessage calls that replied in a thread.
func (c *nudgeCluster) threadPosts() int {
	n := 0
	for _, call := range c.fake.Calls("chat.postMessage") {
		if call.Form.Get("thread_ts") != "" {
			n++
		}
	}
	return n
}

// until polls cond until it holds, failing the test after within.
func until(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for an event
	}
}

// A serve process killed (SIGKILL) after Slack stored its reminder and
// before it recorded the delivery, and the next one killed the same way at
// its escalation, leave one reminder and one escalation in the card's
// thread: each following process finds the reply by its metadata once the
// dead one's lease has run out.
func TestKilledServeSendsEachNudgeOnce(t *testing.T) {
	t.Parallel()
	c := newNudgeCluster(t)
	req := c.submit(t, 1)

	var (
		mu      sync.Mutex
		current *serveProcess
		killed  = make(chan string, 2)
		seen    = map[string]bool{}
	)
	c.fake.AfterPost(func(m bottest.Message) {
		kind, _, _ := strings.Cut(m.Text, ":")
		mu.Lock()
		defer mu.Unlock()
		if m.ThreadTS == "" || seen[kind] {
			return
		}
		seen[kind] = true
		p := current
		_ = p.cmd.Process.Kill() // SIGKILL before Slack answers: the delivery is never recorded
		killed <- kind
	})
	for _, want := range []string{"Reminder", "Escalation"} {
		p := c.start(t)
		mu.Lock()
		current = p
		mu.Unlock()
		select {
		case kind := <-killed:
			if kind != want {
				t.Fatalf("killed at %q, want %q", kind, want)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("serve never posted the %s", want)
		}
		_ = p.cmd.Wait()
		// The dead process's claim is a lease (two minutes in serve): let it
		// run out now rather than wait for it.
		c.exec(t, `UPDATE outbox SET next_attempt_at = now() WHERE state = 'pending'`)
	}
	c.start(t)
	until(t, 60*time.Second, "every delivery to be recorded", func() bool {
		return c.count(t, `SELECT count(*) FROM outbox WHERE state = 'pending'`) == 0 && len(c.replies(t, req)) >= 2
	})
	replies := c.replies(t, req)
	if len(replies) != 2 || !strings.HasPrefix(replies[0], "Reminder:") || !strings.HasPrefix(replies[1], "Escalation:") {
		t.Fatalf("thread replies = %q, want one reminder then one escalation", replies)
	}
	if n := c.threadPosts(); n != 2 {
		t.Errorf("thread posts = %d, want 2", n)
	}
	if n := c.fake.Count("conversations.replies"); n < 2 {
		t.Errorf("conversations.replies calls = %d: the retries did not look in the thread", n)
	}
	if r, e := c.events(t, req, "reminded"), c.events(t, req, "escalated"); r != 1 || e != 1 {
		t.Errorf("audit: %d reminded, %d escalated; want 1 each", r, e)
	}
	if n := len(c.fake.Messages(nudgeChannel)); n != 1 {
		t.Errorf("%d cards, want 1", n)
	}
}

// Two serve processes sweeping one PostgreSQL send each request one
// reminder and one escalation, and both report the pending requests.
func TestTwoServesSendEachNudgeOnce(t *testing.T) {
	t.Parallel()
	c := newNudgeCluster(t)
	const n = 5
	reqs := make([]store.Request, n)
	for i := range reqs {
		reqs[i] = c.submit(t, i)
	}
	procs := []*serveProcess{c.start(t), c.start(t)}
	until(t, 90*time.Second, "every request's reminder and escalation", func() bool {
		for _, req := range reqs {
			if len(c.replies(t, req)) < 2 {
				return false
			}
		}
		return c.count(t, `SELECT count(*) FROM outbox WHERE state = 'pending'`) == 0
	})
	for _, req := range reqs {
		// Due together on a busy machine, the two replies may be posted by
		// the two replicas in either order; each must be posted once.
		replies := c.replies(t, req)
		slices.Sort(replies)
		if len(replies) != 2 || !strings.HasPrefix(replies[0], "Escalation: <!subteam^S0ONCALL>") ||
			!strings.HasPrefix(replies[1], "Reminder: <@U0ANA> <!subteam^S0FINANCE>") {
			t.Errorf("request %s: replies %q", req.Key[:11], replies)
		}
		if r, e := c.events(t, req, "reminded"), c.events(t, req, "escalated"); r != 1 || e != 1 {
			t.Errorf("request %s: %d reminded, %d escalated", req.Key[:11], r, e)
		}
	}
	if got := c.threadPosts(); got != 2*n {
		t.Errorf("thread posts = %d, want %d", got, 2*n)
	}

	sent := 0.0
	for _, p := range procs {
		m := p.metrics(t)
		sent += m[`countersign_slack_nudges_sent_total{kind="reminder"}`] + m[`countersign_slack_nudges_sent_total{kind="escalation"}`]
		if got := m[`countersign_pending_requests{tool="billing.credit"}`]; got != n {
			t.Errorf("pending requests = %v, want %d", got, n)
		}
		if age := m[`countersign_pending_oldest_age_seconds{tool="billing.credit"}`]; age < 4 {
			t.Errorf("oldest pending age = %vs, want at least the 4s the escalation waited", age)
		}
	}
	if sent != 2*n {
		t.Errorf("nudges sent by both processes = %v, want %d", sent, 2*n)
	}
}

func (c *nudgeCluster) exec(t *testing.T, sql string) {
	t.Helper()
	if _, err := c.pg.Pool.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
}

func (c *nudgeCluster) count(t *testing.T, sql string) (n int) {
	t.Helper()
	if err := c.pg.Pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
