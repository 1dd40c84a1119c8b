package hook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/embedded"
	"github.com/countersign/countersign/store/storetest"
	"github.com/countersign/countersign/wire"
)

// Tokens of the agents in the isolation tests.
const (
	tokenA     = "agent-a-token"
	tokenB     = "agent-b-token"
	tokenAdmin = "admin-agent-token"
)

// waiter counts a request's long-polls.
type waiter interface{ Waiting(requestID string) int }

// hookStore is a store under the hook, with what wakes its long-polls.
type hookStore struct {
	store.Store
	notifier store.Notifier
	waiting  func(requestID string) int
}

// hookStores opens each store the hook runs on: PostgreSQL (inserting first,
// as serve runs it) and the embedded store.
var hookStores = []struct {
	name string
	open func(t *testing.T, ctx context.Context, logger *slog.Logger) hookStore
}{
	{"postgres", func(t *testing.T, ctx context.Context, logger *slog.Logger) hookStore {
		db := storetest.NewDB(t)
		listener, service, listening := db.Notifier(logger)
		if err := service.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = service.Stop(context.Background()) })
		select {
		case <-listening:
		case <-time.After(10 * time.Second):
			t.Fatal("listener did not start")
		}
		return hookStore{Store: store.NewLedger(db, store.Options{}), notifier: listener, waiting: listener.(waiter).Waiting}
	}},
	{"embedded", func(t *testing.T, ctx context.Context, logger *slog.Logger) hookStore {
		d, err := embedded.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		if _, err := d.Migrate(ctx, nil); err != nil {
			t.Fatal(err)
		}
		notifier, _, _ := d.Notifier(logger)
		return hookStore{Store: store.NewLedger(d, store.Options{}), notifier: notifier, waiting: notifier.(waiter).Waiting}
	}},
}

// isolationBundle is the hook with three agents: agent-a, agent-b and the
// admin agent auditor.
type isolationBundle struct {
	*bundle
	store hookStore
}

func forEachHookStore(t *testing.T, test func(t *testing.T, b *isolationBundle)) {
	for _, hs := range hookStores {
		t.Run(hs.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			logger := slog.New(slog.DiscardHandler)
			s := hs.open(t, ctx, logger)
			batcher := store.NewIntakeBatcher(s, 2, 16)
			if err := batcher.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = batcher.Stop(context.Background()) })
			svc := approvalstest.New(t, approvals.Config{DB: s, Logger: logger, Batcher: batcher, Tools: map[string]approvals.Tool{
				"billing.credit": {Name: "billing.credit", Approvers: []string{approverA}, RequestTTL: time.Hour},
			}})
			var agents Agents
			for _, a := range []struct {
				name, token string
				admin       bool
			}{{"agent-a", tokenA, false}, {"agent-b", tokenB, false}, {"auditor", tokenAdmin, true}} {
				sum := sha256.Sum256([]byte(a.token))
				agent, err := ParseAgent(a.name, hex.EncodeToString(sum[:]))
				if err != nil {
					t.Fatal(err)
				}
				agent.Admin = a.admin
				agents = append(agents, agent)
			}
			server := httptest.NewServer(conforming(t, NewHandler(svc, agents, s.notifier, logger, NewMetrics(prometheus.NewRegistry()))))
			t.Cleanup(server.Close)
			test(t, &isolationBundle{bundle: &bundle{svc: svc, server: server, ctx: ctx}, store: s})
		})
	}
}

// create posts an intent as the agent with token and returns the response.
func (b *isolationBundle) create(t *testing.T, token, body, key string) response {
	t.Helper()
	var header map[string]string
	if key != "" {
		header = map[string]string{"Idempotency-Key": key}
	}
	return b.do(t, http.MethodPost, "/v1/requests", token, strings.NewReader(body), header)
}

// mustCreate posts an intent that must be new.
func (b *isolationBundle) mustCreate(t *testing.T, token, body, key string) wire.Request {
	t.Helper()
	r := b.create(t, token, body, key)
	if r.status != http.StatusCreated {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	return r.view(t)
}

// unchanged checks that a request is still pending with nothing but its
// "requested" event.
func (b *isolationBundle) unchanged(t *testing.T, id string) {
	t.Helper()
	req, err := b.store.RequestByID(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if req.Status != store.RequestPending {
		t.Errorf("request %s is %s, want pending", req.Key, req.Status)
	}
	events, err := b.store.EventsFor(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Kind != "requested" {
		t.Errorf("events of %s = %+v, want only requested", req.Key, events)
	}
}

func intentBody(run string, amount int) string {
	return fmt.Sprintf(`{"run_id": %q, "step": 6, "tool": "billing.credit",
	 "effect": {"invoice": "inv_8841", "amount_cents": %d, "currency": "USD"},
	 "summary": "Credit to inv_8841", "reason": "duplicate charge"}`, run, amount)
}

// Another agent's request answers exactly as a request that does not exist,
// by key, id or prefix, for a read, a long-poll and a cancel; the request is
// left as it was. An admin agent reads, waits on and cancels it.
func TestHookAgentSeesOnlyItsOwnRequests(t *testing.T) {
	t.Parallel()
	forEachHookStore(t, func(t *testing.T, b *isolationBundle) {
		derived := b.mustCreate(t, tokenA, intentBody("r-a", 4200), "")
		clientKeyed := b.mustCreate(t, tokenA, intentBody("r-a", 4300), "order-5512-credit")
		own := b.mustCreate(t, tokenB, intentBody("r-b", 4200), "")

		missing := map[string]response{
			"GET":    b.do(t, http.MethodGet, "/v1/requests/wa_"+strings.Repeat("0", 64), tokenB, nil, nil),
			"wait":   b.do(t, http.MethodGet, "/v1/requests/00000000-0000-4000-8000-000000000000?wait=30s", tokenB, nil, nil),
			"cancel": b.do(t, http.MethodPost, "/v1/requests/order-0000-none/cancel", tokenB, nil, nil),
		}
		for what, r := range missing {
			if code, _ := r.errorCode(t); r.status != http.StatusNotFound || code != approvals.CodeNotFound {
				t.Fatalf("%s of a missing request = %d %s", what, r.status, r.body)
			}
		}
		for _, v := range []wire.Request{derived, clientKeyed} {
			for _, ref := range []string{v.Key, v.ID, strings.ToUpper(v.ID), v.Key[:11]} {
				start := time.Now()
				got := map[string]response{
					"GET":    b.do(t, http.MethodGet, "/v1/requests/"+ref, tokenB, nil, nil),
					"wait":   b.do(t, http.MethodGet, "/v1/requests/"+ref+"?wait=30s", tokenB, nil, nil),
					"cancel": b.do(t, http.MethodPost, "/v1/requests/"+ref+"/cancel", tokenB, nil, nil),
				}
				for what, r := range got {
					if r.status != http.StatusNotFound || withoutRequestID(t, r.body) != withoutRequestID(t, missing[what].body) {
						t.Errorf("agent-b %s %s = %d %s; want the missing request's 404 %s", what, ref, r.status, r.body, missing[what].body)
					}
				}
				if waited := time.Since(start); waited > 10*time.Second {
					t.Errorf("agent-b's long-poll on %s waited %s; it should be refused at once", ref, waited)
				}
			}
			b.unchanged(t, v.ID)
			if n := b.store.waiting(v.ID); n != 0 {
				t.Errorf("%d long-polls still subscribed to %s", n, v.Key)
			}
			// Its own agent and the admin still read it, pending.
			for _, token := range []string{tokenA, tokenAdmin} {
				r := b.do(t, http.MethodGet, "/v1/requests/"+v.Key, token, nil, nil)
				if r.status != http.StatusOK || r.view(t).ID != v.ID || r.view(t).Status != wire.StatusPending {
					t.Errorf("GET %s with token %s = %d %s", v.Key, token, r.status, r.body)
				}
			}
		}
		// agent-b's own request is not hidden from it, and is from agent-a.
		if r := b.do(t, http.MethodGet, "/v1/requests/"+own.ID, tokenB, nil, nil); r.status != http.StatusOK {
			t.Errorf("agent-b reading its own request = %d %s", r.status, r.body)
		}
		if r := b.do(t, http.MethodGet, "/v1/requests/"+own.Key, tokenA, nil, nil); r.status != http.StatusNotFound {
			t.Errorf("agent-a reading agent-b's request = %d %s", r.status, r.body)
		}

		// The admin's long-poll on agent-a's request wakes when agent-a
		// cancels it.
		done := make(chan response, 1)
		go func() {
			done <- b.do(t, http.MethodGet, "/v1/requests/"+derived.Key+"?wait=30s", tokenAdmin, nil, nil)
		}()
		deadline := time.Now().Add(10 * time.Second)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for b.store.waiting(derived.ID) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the admin's long-poll never subscribed")
			}
			<-tick.C
		}
		if r := b.do(t, http.MethodPost, "/v1/requests/"+derived.ID+"/cancel", tokenA, nil, nil); r.status != http.StatusOK {
			t.Fatalf("agent-a cancelling its own request = %d %s", r.status, r.body)
		}
		if r := <-done; r.status != http.StatusOK || r.view(t).Status != wire.StatusCancelled {
			t.Errorf("admin long-poll = %d %s, want it woken with cancelled", r.status, r.body)
		}

		// The admin cancels agent-a's other request, and the audit trail
		// names the admin.
		r := b.do(t, http.MethodPost, "/v1/requests/"+clientKeyed.Key+"/cancel", tokenAdmin, nil, nil)
		if r.status != http.StatusOK || r.view(t).Status != wire.StatusCancelled {
			t.Fatalf("admin cancel = %d %s", r.status, r.body)
		}
		events, err := b.store.EventsFor(b.ctx, clientKeyed.ID)
		if err != nil {
			t.Fatal(err)
		}
		if last := events[len(events)-1]; last.Kind != "cancelled" || last.Actor != store.AgentActor("auditor") {
			t.Errorf("last event = %s by %s, want cancelled by agent:auditor", last.Kind, last.Actor)
		}
	})
}

// A key that names another agent's request is 409 key_reused for the same
// fields and for other fields alike, with a body that says nothing of the
// request; the request is left as it was.
func TestHookReplayOfAnotherAgentsKeyRevealsNothing(t *testing.T) {
	t.Parallel()
	forEachHookStore(t, func(t *testing.T, b *isolationBundle) {
		derived := b.mustCreate(t, tokenA, intentBody("r-a", 4200), "")
		clientKeyed := b.mustCreate(t, tokenA, intentBody("r-a", 4300), "order-5512-credit")

		attempts := []struct {
			name, body, key string
		}{
			{"same fields, derived key", intentBody("r-a", 4200), ""},
			{"same fields, derived key sent as the client key", intentBody("r-a", 4200), derived.Key},
			{"same fields, client key", intentBody("r-a", 4300), "order-5512-credit"},
			{"other fields, client key", intentBody("r-guess", 1), "order-5512-credit"},
		}
		var first []byte
		for _, token := range []string{tokenB, tokenAdmin} {
			for _, a := range attempts {
				r := b.create(t, token, a.body, a.key)
				if code, _ := r.errorCode(t); r.status != http.StatusConflict || code != approvals.CodeKeyReused {
					t.Errorf("%s: %d %s, want 409 key_reused", a.name, r.status, r.body)
				}
				if r.header.Get("Idempotent-Replayed") != "" {
					t.Errorf("%s: answered as a replay", a.name)
				}
				var fields map[string]json.RawMessage
				if err := json.Unmarshal(r.body, &fields); err != nil || len(fields) != 1 || fields["error"] == nil {
					t.Errorf("%s: body %s has more than an error", a.name, r.body)
				}
				for _, secret := range []string{derived.ID, clientKeyed.ID, derived.Key, "agent-a", "4300", "pending"} {
					if strings.Contains(string(r.body), secret) {
						t.Errorf("%s: body %s reveals %q", a.name, r.body, secret)
					}
				}
				// Guessing the fields right or wrong answers the same.
				if first == nil {
					first = r.body
				} else if withoutRequestID(t, r.body) != withoutRequestID(t, first) {
					t.Errorf("%s: body %s differs from %s", a.name, r.body, first)
				}
			}
		}
		b.unchanged(t, derived.ID)
		b.unchanged(t, clientKeyed.ID)
		// agent-a's own replay still answers with its request.
		if r := b.create(t, tokenA, intentBody("r-a", 4300), "order-5512-credit"); r.status != http.StatusOK || r.view(t).ID != clientKeyed.ID {
			t.Errorf("agent-a's replay = %d %s", r.status, r.body)
		}
	})
}

// Two agents sending one new key at the same moment: one creates the
// request, the other is refused, whichever reached the insert first.
func TestHookConcurrentKeyFromTwoAgents(t *testing.T) {
	t.Parallel()
	forEachHookStore(t, func(t *testing.T, b *isolationBundle) {
		for i := range 10 {
			key := fmt.Sprintf("race-key-%04d", i)
			tokens := []string{tokenA, tokenB}
			got := make([]response, 2)
			together(2, func(j int) { got[j] = b.create(t, tokens[j], intentBody("r-race", 100+i), key) })
			created := -1
			for j, r := range got {
				switch r.status {
				case http.StatusCreated:
					created = j
				case http.StatusConflict:
				default:
					t.Fatalf("%s: %d %s", key, r.status, r.body)
				}
			}
			if created < 0 || got[1-created].status != http.StatusConflict {
				t.Fatalf("%s: statuses %d and %d, want one 201 and one 409", key, got[0].status, got[1].status)
			}
			req, err := b.store.RequestByKey(b.ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"agent-a", "agent-b"}[created]; req.RequestedBy != want {
				t.Errorf("%s belongs to %s, but %s was told it created it", key, req.RequestedBy, want)
			}
		}
	})
}
