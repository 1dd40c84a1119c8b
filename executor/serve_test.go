package executor_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/internal/servetest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

func TestMain(m *testing.M) { servetest.Main(m) }

// serveTool is the tool section of a serve test's configuration.
type serveTool struct {
	keyAware     bool
	verify       bool
	verifyPath   string // default /objects?key={key}
	precondition bool
	timeout      string
	claimTimeout string
	// verifyAfter is a key-unaware tool's settle time before a verify;
	// default 100ms, so these tests verify promptly.
	verifyAfter string
}

// cluster is a database, a fake provider and the countersign processes
// serving them.
type cluster struct {
	url      string
	db       *postgres.Driver
	provider *providertest.Provider
	config   string
	review   *approvals.Service
}

func newCluster(t *testing.T, tool serveTool) *cluster {
	t.Helper()
	c := &cluster{url: storetest.NewURL(t), provider: providertest.New()}
	c.provider.Secret = []byte(secret)
	srv := providertest.Start(t, c.provider)
	var err error
	if c.db, err = postgres.Open(context.Background(), c.url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.db.Close)
	token := sha256.Sum256([]byte("agent-token"))
	yaml := fmt.Sprintf(`executor:
  dispatch_schedule: "@every 1s"
  reconcile_schedule: "@every 1s"
agents:
  - name: agent
    token_sha256: %s
tools:
  %s:
    approvers: [%s]
    dispatch: {method: POST, url: "%s/credits", timeout: %s}
    key_aware: %t
    max_attempts: 5
    claim_timeout: %s
    verify_after: %s
    approval_ttl: 24h
`, hex.EncodeToString(token[:]), toolName, approver, srv.URL, tool.timeout, tool.keyAware, tool.claimTimeout, cmp.Or(tool.verifyAfter, "100ms"))
	if tool.verify {
		if tool.verifyPath == "" {
			tool.verifyPath = "/objects?key={key}"
		}
		yaml += fmt.Sprintf("    verify: {url: \"%s%s\"}\n", srv.URL, tool.verifyPath)
	}
	if tool.precondition {
		yaml += fmt.Sprintf("    precondition: {url: \"%s/precondition\"}\n", srv.URL)
	}
	c.config = filepath.Join(t.TempDir(), "countersign.yaml")
	if err := os.WriteFile(c.config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c.review = approvalstest.New(t, approvals.Config{
		DB:     store.NewLedger(c.db, store.Options{}),
		Tools:  map[string]approvals.Tool{toolName: {Name: toolName, Approvers: []string{approver}, MaxAttempts: 5}},
		Logger: slog.New(slog.DiscardHandler),
	})
	return c
}

// process is a running `countersign serve`.
type process struct{ *servetest.Process }

// start runs `countersign serve` and waits until its executor is running.
func (c *cluster) start(t *testing.T) *process {
	t.Helper()
	p := servetest.Start(t,
		"COUNTERSIGN_DATABASE_URL="+c.url,
		"COUNTERSIGN_DISPATCH_SECRET="+secret,
		"COUNTERSIGN_CONFIG="+c.config,
	)
	if !p.WaitLog(`"msg":"executor started"`, 30*time.Second) {
		t.Fatal("countersign serve did not start its executor")
	}
	return &process{p}
}

// metric returns the value of one sample on the process's /metrics.
func (p *process) metric(t *testing.T, sample string) float64 {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(p.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	return 0
}

// terminate sends SIGTERM and waits at most within for the process to
// exit; it returns the exit code.
func (p *process) terminate(t *testing.T, within time.Duration) int {
	t.Helper()
	code, exited := p.Stop(within)
	if !exited {
		t.Fatalf("the process did not exit within %s of SIGTERM", within)
	}
	return code
}

func (c *cluster) execution(t *testing.T, requestID string) store.Execution {
	t.Helper()
	e, err := store.NewLedger(c.db, store.Options{}).LatestExecution(context.Background(), requestID)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (c *cluster) waitState(t *testing.T, requestID string, want store.ExecState, within time.Duration) {
	t.Helper()
	eventually(t, within, "execution to become "+string(want), func() bool {
		return c.execution(t, requestID).State == want
	})
}

// TestKillAfterTheProviderProcessed kills a real countersign process after
// the provider performed the write but before the outcome was recorded, then
// restarts it: the write is verified at the provider, never sent again, even
// though the provider ignores keys.
func TestKillAfterTheProviderProcessed(t *testing.T) {
	t.Parallel()
	c := newCluster(t, serveTool{verify: true, timeout: "3s", claimTimeout: "4s"})
	c.provider.IgnoreKeys(true)
	c.provider.Set(providertest.Behavior{HangAfterProcess: true})
	first := c.start(t)

	req := approveOn(t, c.review, "run-kill-after")
	eventually(t, 10*time.Second, "the provider to process the write", func() bool { return c.provider.Objects() == 1 })
	first.Kill()
	if e := c.execution(t, req.ID); e.State != store.ExecClaimed {
		t.Fatalf("after the kill the execution is %s; the test meant to kill before the outcome was recorded", e.State)
	}

	c.provider.Set(providertest.Behavior{})
	c.start(t)
	c.waitState(t, req.ID, store.ExecSucceeded, 30*time.Second)
	if got := c.provider.Received(); got != 1 {
		t.Fatalf("the provider received %d writes, want 1", got)
	}
	wantObjects(t, c.provider, req.Key, 1)
	if kinds := eventKinds(t, store.NewLedger(c.db, store.Options{}), req.ID); !containsInOrder(kinds, "claimed", "unknown", "succeeded") {
		t.Fatalf("events %v", kinds)
	}
}

// TestKillAfterTheProviderProcessedAwkwardKeys is
// TestKillAfterTheProviderProcessed with client keys that change when escaped
// for the wrong part of a URL, with the key in the verify URL's path and in
// its query: the restarted process must ask the provider for exactly those
// keys, and nothing is sent twice.
func TestKillAfterTheProviderProcessedAwkwardKeys(t *testing.T) {
	t.Parallel()
	for _, form := range verifyForms {
		t.Run(form.name, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, serveTool{verify: true, verifyPath: form.path, timeout: "3s", claimTimeout: "4s"})
			c.provider.IgnoreKeys(true)
			c.provider.Set(providertest.Behavior{HangAfterProcess: true})
			// Approved before the process starts, so one claim takes them all
			// and every send is held at once.
			reqs := make([]store.Request, len(awkwardKeys))
			for i, key := range awkwardKeys {
				reqs[i] = approveKey(t, c.review, fmt.Sprintf("run-kill-awkward-%d", i), key)
			}
			first := c.start(t)
			eventually(t, 10*time.Second, "the provider to process every write", func() bool { return c.provider.Objects() == len(reqs) })
			first.Kill()
			for _, req := range reqs {
				if e := c.execution(t, req.ID); e.State != store.ExecClaimed {
					t.Fatalf("after the kill the execution is %s; the test meant to kill before the outcome was recorded", e.State)
				}
			}

			c.provider.Set(providertest.Behavior{})
			c.start(t)
			// A wrong verify would send a write back to ready, and it would
			// be sent again before its execution settles.
			eventually(t, 30*time.Second, "every execution to settle", func() bool {
				for _, req := range reqs {
					switch c.execution(t, req.ID).State {
					case store.ExecSucceeded, store.ExecFailed, store.ExecNeedsReview:
					default:
						return false
					}
				}
				return true
			})
			wantVerifiedOnce(t, c.provider, reqs, func(id string) store.Execution { return c.execution(t, id) })
		})
	}
}

// TestSigtermRecordsTheSendInFlight stops a real countersign process with
// SIGTERM while a slow provider is answering a write of a tool that neither
// honours keys nor can be verified: the process waits for the answer,
// records it and exits 0, so nothing is left to a human.
func TestSigtermRecordsTheSendInFlight(t *testing.T) {
	t.Parallel()
	// The grace for this tool: its dispatch timeout and 5s to record.
	const grace = 10 * time.Second
	c := newCluster(t, serveTool{timeout: "5s", claimTimeout: "10s"})
	c.provider.IgnoreKeys(true)
	c.provider.Set(providertest.Behavior{Delay: 1500 * time.Millisecond})
	p := c.start(t)

	req := approveOn(t, c.review, "run-sigterm")
	eventually(t, 10*time.Second, "the provider to receive the write", func() bool { return c.provider.Received() == 1 })
	if code := p.terminate(t, grace); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM", code)
	}
	if e := c.execution(t, req.ID); e.State != store.ExecSucceeded {
		t.Fatalf("after shutdown the execution is %s (code %q), want succeeded", e.State, deref(e.LastCode))
	}
	if got := c.provider.Received(); got != 1 {
		t.Fatalf("the provider received %d writes, want 1", got)
	}
	if kinds := eventKinds(t, store.NewLedger(c.db, store.Options{}), req.ID); !containsInOrder(kinds, "claimed", "succeeded") {
		t.Fatalf("events %v", kinds)
	}
}

// TestKillWithAKeyAwareProvider kills a real countersign process after the
// provider processed the write; the provider has no verify URL but honours
// keys, so the restarted process resends under the same key and gets the
// stored answer: two writes arrive, one object exists.
func TestKillWithAKeyAwareProvider(t *testing.T) {
	t.Parallel()
	c := newCluster(t, serveTool{keyAware: true, timeout: "3s", claimTimeout: "4s"})
	c.provider.Set(providertest.Behavior{HangAfterProcess: true})
	first := c.start(t)

	req := approveOn(t, c.review, "run-kill-key-aware")
	eventually(t, 10*time.Second, "the provider to process the write", func() bool { return c.provider.Objects() == 1 })
	first.Kill()

	c.provider.Set(providertest.Behavior{})
	c.start(t)
	c.waitState(t, req.ID, store.ExecSucceeded, 30*time.Second)
	if got := c.provider.Writes(req.Key); got != 2 {
		t.Fatalf("the provider received %d writes for the key, want 2 (the lost one and the resend)", got)
	}
	wantObjects(t, c.provider, req.Key, 1)
	if e := c.execution(t, req.ID); deref(e.ProviderRef) != "obj_1" {
		t.Fatalf("provider_ref %q, want the first object's", deref(e.ProviderRef))
	}
}

// TestKillBeforeDispatch kills a real countersign process after its claim
// committed but before anything was sent (while it waits on the precondition
// check), then restarts it: the write happens exactly once.
func TestKillBeforeDispatch(t *testing.T) {
	t.Parallel()
	c := newCluster(t, serveTool{verify: true, precondition: true, timeout: "3s", claimTimeout: "4s"})
	c.provider.IgnoreKeys(true)
	c.provider.HangPrecondition(true)
	first := c.start(t)

	req := approveOn(t, c.review, "run-kill-before")
	eventually(t, 10*time.Second, "the claim and its precondition check", func() bool { return c.provider.PreconditionChecks() == 1 })
	first.Kill()
	if e := c.execution(t, req.ID); e.State != store.ExecClaimed || c.provider.Received() != 0 {
		t.Fatalf("after the kill: %s with %d writes; want claimed with none", e.State, c.provider.Received())
	}

	c.provider.HangPrecondition(false)
	c.start(t)
	c.waitState(t, req.ID, store.ExecSucceeded, 30*time.Second)
	if got := c.provider.Received(); got != 1 {
		t.Fatalf("the provider received %d writes, want 1", got)
	}
	wantObjects(t, c.provider, req.Key, 1)
}

// TestThreeProcessesFiveHundredApprovals runs three countersign processes on
// one database and approves 500 requests: the provider, which ignores keys
// and so would keep any duplicate, ends with exactly 500 objects.
func TestThreeProcessesFiveHundredApprovals(t *testing.T) {
	t.Parallel()
	const n = 500
	c := newCluster(t, serveTool{keyAware: false, verify: true, timeout: "5s", claimTimeout: "1m"})
	c.provider.IgnoreKeys(true)
	var procs []*process
	for range 3 {
		procs = append(procs, c.start(t))
	}
	keys := make(map[string]bool, n)
	for i := range n {
		keys[approveOn(t, c.review, fmt.Sprintf("run-fleet-%d", i)).Key] = true
	}
	eventually(t, 90*time.Second, "500 executions to succeed", func() bool {
		var done int
		if err := c.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE state = 'succeeded'`).Scan(&done); err != nil {
			t.Fatal(err)
		}
		return done == n
	})
	objects := c.provider.AllObjects()
	if len(objects) != n {
		t.Fatalf("the provider holds %d objects, want %d", len(objects), n)
	}
	seen := make(map[string]bool, n)
	for _, o := range objects {
		if seen[o.Key] || !keys[o.Key] {
			t.Fatalf("object %s for key %s is a duplicate or unknown", o.ID, o.Key)
		}
		seen[o.Key] = true
	}
	var workers int
	if err := c.db.Pool.QueryRow(context.Background(),
		`SELECT count(DISTINCT actor) FROM events WHERE kind = 'succeeded'`).Scan(&workers); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d approvals dispatched by %d processes", n, workers)
	// Each process counts what it did; together they count every execution once.
	var counted float64
	for _, p := range procs {
		counted += p.metric(t, `countersign_executor_executions_total{code="none",outcome="succeeded"}`)
	}
	if counted != n {
		t.Fatalf("the processes' metrics count %v succeeded executions, want %d", counted, n)
	}
	if c.provider.BadSignatures() != 0 {
		t.Fatalf("%d writes carried a bad signature", c.provider.BadSignatures())
	}
}

func containsInOrder(kinds []string, want ...string) bool {
	i := 0
	for _, k := range kinds {
		if i < len(want) && k == want[i] {
			i++
		}
	}
	return i == len(want)
}
