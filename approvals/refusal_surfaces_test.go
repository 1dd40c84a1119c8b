package approvals_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"html"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/hook/apitest"
	"github.com/countersign/countersign/inbox"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

const (
	surfaceTool    = "billing.credit"
	surfaceChannel = "C0BILLING"
	surfaceToken   = "surface-agent-token"
	plainToken     = "plain-agent-token" // an agent without a callback
	deciderA       = "U0ANA"
	deciderB       = "U0BEN"
	forWhom        = "U0REQUESTER"
	nobody         = "U0OUTSIDER"
	financeGroup   = "S0FINANCE"
)

// answer is a refusal as one surface showed it.
type answer struct {
	Code, Message string
}

// provoke produces one refusal through one surface, or is nil where the
// surface cannot produce it.
type provoke func(t *testing.T, s *surfaces) answer

// Every refusal has the same code and the same words on the agent hook, in
// Slack and in the inbox, wherever each can produce it. A code without a case
// here fails the test.
func TestSurfacesAgreeOnEveryRefusal(t *testing.T) {
	t.Parallel()
	up := newSurfaces(t, storetest.NewURL(t))
	down := newSurfaces(t, unreachableURL(t))

	cases := map[string]struct{ hook, slack, inbox provoke }{
		approvals.CodeMalformedJSON: {hook: func(t *testing.T, s *surfaces) answer {
			return s.hookCall(t, http.MethodPost, "/v1/requests", surfaceToken, []byte(`{"run_id":`))
		}},
		approvals.CodeInvalidRequest: {hook: func(t *testing.T, s *surfaces) answer {
			return s.hookCall(t, http.MethodPost, "/v1/requests", surfaceToken, []byte(`{"run_id":"r-1","step":1,"tool":"billing.credit","effect":[]}`))
		}},
		approvals.CodeInvalidEffect: {hook: func(t *testing.T, s *surfaces) answer {
			return s.hookCall(t, http.MethodPost, "/v1/requests", surfaceToken, []byte(`{"run_id":"r-1","step":1,"tool":"crm.note","effect":{"text":""}}`))
		}},
		approvals.CodeUnknownTool: {hook: func(t *testing.T, s *surfaces) answer {
			return s.hookCall(t, http.MethodPost, "/v1/requests", surfaceToken, []byte(`{"run_id":"r-1","step":1,"tool":"db.drop","effect":{}}`))
		}},
		// Only intake refuses by policy.
		approvals.CodeDeniedByPolicy: {hook: func(t *testing.T, s *surfaces) answer {
			return s.hookCall(t, http.MethodPost, "/v1/requests", surfaceToken, []byte(`{"run_id":"r-1","step":1,"tool":"crm.purge","effect":{}}`))
		}},
		approvals.CodeKeyReused: {hook: func(t *testing.T, s *surfaces) answer {
			if resp := s.hookSend(t, http.MethodPost, "/v1/requests", surfaceToken, intentBody("key-reused-1", 1)); resp.StatusCode != http.StatusCreated {
				t.Fatalf("the first intent answered %d", resp.StatusCode)
			}
			return s.hookCall(t, http.MethodPost, "/v1/requests", surfaceToken, intentBody("key-reused-1", 2))
		}},
		approvals.CodePruned: {hook: func(t *testing.T, s *surfaces) answer {
			for _, path := range []string{"/v1/requests", "/v1/requests/pruned-1/cancel"} {
				body := intentBody("pruned-1", 1)
				if path != "/v1/requests" {
					body = nil
				}
				if resp := s.hookSend(t, http.MethodPost, path, surfaceToken, body); resp.StatusCode >= 300 {
					t.Fatalf("POST %s answered %d", path, resp.StatusCode)
				}
			}
			if n, err := store.NewLedger(s.db, store.Options{}).Prune(context.Background(),
				store.PruneParams{Before: time.Now().Add(time.Minute)}); err != nil || n != 1 {
				t.Fatalf("Prune = %d, %v", n, err)
			}
			return s.hookCall(t, http.MethodPost, "/v1/requests", surfaceToken, intentBody("pruned-1", 1))
		}},
		approvals.CodeUnauthorized: {hook: func(t *testing.T, s *surfaces) answer {
			return s.hookCall(t, http.MethodGet, "/v1/requests/wa_x", "not-a-token", nil)
		}},
		approvals.CodeTooLarge: {hook: func(t *testing.T, s *surfaces) answer {
			return s.hookCall(t, http.MethodPost, "/v1/requests", surfaceToken, bytes.Repeat([]byte(" "), approvals.MaxBodyBytes+1))
		}},
		approvals.CodeNotFound: {
			hook: func(t *testing.T, s *surfaces) answer {
				return s.hookCall(t, http.MethodGet, "/v1/requests/"+missingID, surfaceToken, nil)
			},
			slack: func(t *testing.T, s *surfaces) answer {
				return s.click(t, deciderA, "approve", buttonValue(missingID, 1, "sha256:00"))
			},
			inbox: func(t *testing.T, s *surfaces) answer {
				return s.decide(t, deciderA, missingID, 1, "sha256:00")
			},
		},
		// The agent API's own: a method a route does not take, and a body
		// sent without Content-Type: application/json.
		approvals.CodeMethodNotAllowed: {hook: func(t *testing.T, s *surfaces) answer {
			return s.hookCall(t, http.MethodDelete, "/v1/requests/"+missingID, surfaceToken, nil)
		}},
		approvals.CodeUnsupportedMediaType: {hook: func(t *testing.T, s *surfaces) answer {
			return s.hookCall(t, http.MethodPost, "/v1/requests", surfaceToken, nil)
		}},
		// One request for all three, so that they name the same decision.
		approvals.CodeAlreadyDecided: {
			hook: func(t *testing.T, s *surfaces) answer {
				return s.hookCall(t, http.MethodPost, "/v1/requests/"+s.standing(t).ID+"/cancel", surfaceToken, nil)
			},
			slack: func(t *testing.T, s *surfaces) answer {
				req := s.standing(t)
				return s.click(t, deciderB, "reject", buttonValue(req.ID, req.Round, req.PayloadHash))
			},
			inbox: func(t *testing.T, s *surfaces) answer {
				req := s.standing(t)
				return s.decide(t, deciderB, req.ID, req.Round, req.PayloadHash)
			},
		},
		approvals.CodeStaleCard: {
			slack: func(t *testing.T, s *surfaces) answer {
				req := s.pending(t)
				return s.click(t, deciderA, "approve", buttonValue(req.ID, req.Round, "sha256:00"))
			},
			inbox: func(t *testing.T, s *surfaces) answer {
				req := s.pending(t)
				return s.decide(t, deciderA, req.ID, req.Round, "sha256:00")
			},
		},
		approvals.CodeNotApprover: {
			slack: func(t *testing.T, s *surfaces) answer {
				req := s.pending(t)
				return s.click(t, nobody, "approve", buttonValue(req.ID, req.Round, req.PayloadHash))
			},
			inbox: func(t *testing.T, s *surfaces) answer {
				req := s.pending(t)
				return s.decide(t, nobody, req.ID, req.Round, req.PayloadHash)
			},
		},
		// deciderA is frozen on the request, then removed from the tool.
		approvals.CodeNoLongerApprover: {
			slack: func(t *testing.T, s *surfaces) answer {
				req := s.pending(t)
				defer s.removeApprover(deciderA)()
				return s.click(t, deciderA, "approve", buttonValue(req.ID, req.Round, req.PayloadHash))
			},
			inbox: func(t *testing.T, s *surfaces) answer {
				req := s.pending(t)
				defer s.removeApprover(deciderA)()
				return s.decide(t, deciderA, req.ID, req.Round, req.PayloadHash)
			},
		},
		approvals.CodeSelfApproval: {
			slack: func(t *testing.T, s *surfaces) answer {
				req := s.pending(t)
				return s.click(t, forWhom, "approve", buttonValue(req.ID, req.Round, req.PayloadHash))
			},
			inbox: func(t *testing.T, s *surfaces) answer {
				req := s.pending(t)
				return s.decide(t, forWhom, req.ID, req.Round, req.PayloadHash)
			},
		},
		// Resolutions are made only in Slack.
		approvals.CodeAlreadyResolved: {slack: func(t *testing.T, s *surfaces) answer {
			req := s.decided(t) // its execution is ready, not in needs_review
			var execID int64
			if err := s.db.Pool.QueryRow(context.Background(), `SELECT id FROM executions WHERE request_id = $1`, req.ID).Scan(&execID); err != nil {
				t.Fatal(err)
			}
			value, _ := json.Marshal(map[string]any{"r": req.ID, "x": execID})
			return s.click(t, deciderA, bot.ActionMarkSucceeded, string(value))
		}},
		// Redrives are asked for only on the hook.
		approvals.CodeNoCallback: {hook: func(t *testing.T, s *surfaces) answer {
			resp := s.hookSend(t, http.MethodPost, "/v1/requests", plainToken, intentBody("no-callback-1", 1))
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("the intent answered %d", resp.StatusCode)
			}
			return s.hookCall(t, http.MethodPost, "/v1/requests/no-callback-1/redrive", plainToken, nil)
		}},
		approvals.CodeNoDelivery: {hook: func(t *testing.T, s *surfaces) answer {
			resp := s.hookSend(t, http.MethodPost, "/v1/requests", surfaceToken, intentBody("no-delivery-1", 1))
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("the intent answered %d", resp.StatusCode)
			}
			return s.hookCall(t, http.MethodPost, "/v1/requests/no-delivery-1/redrive", surfaceToken, nil)
		}},
		// Outcomes are reported only on the hook.
		approvals.CodeNotAgentExecuted: {hook: func(t *testing.T, s *surfaces) answer {
			resp := s.hookSend(t, http.MethodPost, "/v1/requests", surfaceToken, intentBody("dispatched-1", 1))
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("the intent answered %d", resp.StatusCode)
			}
			return s.hookCall(t, http.MethodPost, "/v1/requests/dispatched-1/outcome", surfaceToken, []byte(`{"status":"succeeded"}`))
		}},
		approvals.CodeOutcomeConflict: {hook: func(t *testing.T, s *surfaces) answer {
			resp := s.hookSend(t, http.MethodPost, "/v1/requests", surfaceToken,
				[]byte(`{"run_id":"r-pay","step":1,"tool":"billing.payout","idempotency_key":"payout-1","effect":{"to":"acct_1"}}`))
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("the intent answered %d", resp.StatusCode)
			}
			resp = s.hookSend(t, http.MethodPost, "/v1/requests/payout-1/outcome", surfaceToken, []byte(`{"status":"succeeded"}`))
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("the first outcome answered %d", resp.StatusCode)
			}
			return s.hookCall(t, http.MethodPost, "/v1/requests/payout-1/outcome", surfaceToken, []byte(`{"status":"failed"}`))
		}},
		approvals.CodeUnavailable: {
			hook: func(t *testing.T, _ *surfaces) answer {
				return down.hookCall(t, http.MethodGet, "/v1/requests/"+missingID, surfaceToken, nil)
			},
			slack: func(t *testing.T, _ *surfaces) answer {
				return down.click(t, deciderA, "approve", buttonValue(missingID, 1, "sha256:00"))
			},
			inbox: func(t *testing.T, _ *surfaces) answer {
				return down.decide(t, deciderA, missingID, 1, "sha256:00")
			},
		},
		// The approvers' user group cannot be resolved: nothing the person
		// did, and nothing the database said.
		approvals.CodeInternal: {
			slack: func(t *testing.T, s *surfaces) answer {
				req := s.pending(t)
				s.groups.fail.Store(true)
				defer s.groups.fail.Store(false)
				return s.click(t, nobody, "approve", buttonValue(req.ID, req.Round, req.PayloadHash))
			},
			inbox: func(t *testing.T, s *surfaces) answer {
				req := s.pending(t)
				s.groups.fail.Store(true)
				defer s.groups.fail.Store(false)
				return s.decide(t, nobody, req.ID, req.Round, req.PayloadHash)
			},
		},
	}

	for _, code := range approvals.RefusalCodes() {
		t.Run(code, func(t *testing.T) {
			c, ok := cases[code]
			if !ok {
				t.Fatalf("no case provokes %s: add one for every surface that can produce it", code)
			}
			var got []answer
			var names []string
			for _, p := range []struct {
				name string
				fn   provoke
			}{{"hook", c.hook}, {"slack", c.slack}, {"inbox", c.inbox}} {
				if p.fn == nil {
					continue
				}
				a := p.fn(t, up)
				if a.Code != code || a.Message == "" {
					t.Errorf("%s answered %q (%q), want %s", p.name, a.Code, a.Message, code)
				}
				got, names = append(got, a), append(names, p.name)
			}
			if len(got) == 0 {
				t.Fatalf("the case for %s provokes it nowhere", code)
			}
			for i := 1; i < len(got); i++ {
				if got[i] != got[0] {
					t.Errorf("%s says %q, %s says %q", names[0], got[0].Message, names[i], got[i].Message)
				}
			}
		})
	}
	for code := range cases {
		if !slices.Contains(approvals.RefusalCodes(), code) {
			t.Errorf("a case provokes %s, which RefusalCodes does not list", code)
		}
	}
}

// RefusalCodes lists every Code constant, so the test above covers each.
func TestRefusalCodesListsEveryCode(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				for _, name := range spec.(*ast.ValueSpec).Names {
					if strings.HasPrefix(name.Name, "Code") {
						consts = append(consts, name.Name)
					}
				}
			}
		}
	}
	if len(consts) != len(approvals.RefusalCodes()) {
		t.Fatalf("%d Code constants (%v), but RefusalCodes lists %d", len(consts), consts, len(approvals.RefusalCodes()))
	}
}

// missingID is a request id nothing has.
const missingID = "7d4f8a52-0b6e-4c47-9d1e-2f1a3c5b6e70"

// surfaces are the three ways in, on one service: the agent hook, Slack
// (signed interactions against the fake Slack) and the inbox, one inbox per
// decider since the inbox decides as one configured reviewer.
type surfaces struct {
	db      *postgres.Driver
	svc     *approvals.Service
	groups  *switchGroups
	hook    *httptest.Server
	fake    *bottest.Slack
	bot     *bot.Bot
	slack   *httptest.Server
	metrics *prometheus.Registry
	inboxes map[string]*inboxSite
	runs    atomic.Int64
	// approved is standing's request, once made.
	approved *store.Request
	cleanup  func(func()) // the whole test's, for inboxes opened by a case
}

// switchGroups resolves the finance group to deciderB, or fails while fail
// is set, as a Slack lookup that failed would.
type switchGroups struct{ fail atomic.Bool }

func (g *switchGroups) GroupMembers(context.Context, string) ([]string, error) {
	if g.fail.Load() {
		return nil, errors.New("usergroups.users.list: fatal_error")
	}
	return []string{deciderB}, nil
}

func newSurfaces(t *testing.T, dbURL string) *surfaces {
	t.Helper()
	db, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	logger := slog.New(slog.DiscardHandler)
	s := &surfaces{db: db, groups: &switchGroups{}, fake: bottest.New(t), metrics: prometheus.NewRegistry(), inboxes: map[string]*inboxSite{}, cleanup: t.Cleanup}
	if s.svc, err = approvals.New(approvals.Config{DB: store.NewLedger(db, store.Options{}), Logger: logger, Groups: s.groups, Tools: map[string]approvals.Tool{
		surfaceTool: {Name: surfaceTool, Channel: surfaceChannel, Approvers: []string{deciderA, forWhom, financeGroup}, RequestTTL: time.Hour, MaxAttempts: 3},
		"crm.note":  {Name: "crm.note", Channel: surfaceChannel, Approvers: []string{deciderA}, EffectSchema: noteSchema(t)},
		"crm.purge": {Name: "crm.purge", Channel: surfaceChannel, Approvers: []string{deciderA},
			Verdict: approvals.VerdictDeny, Deny: "Purges are run by the data team, not by agents."},
		"billing.payout": {Name: "billing.payout", Channel: surfaceChannel, Approvers: []string{deciderA},
			Verdict: approvals.VerdictAllow, Execute: approvals.ExecuteAgent},
	}}); err != nil {
		t.Fatal(err)
	}

	sum := sha256.Sum256([]byte(surfaceToken))
	agent, err := hook.ParseAgent("billing-agent", hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	agent.Callback = true
	plainSum := sha256.Sum256([]byte(plainToken))
	plain, err := hook.ParseAgent("plain-agent", hex.EncodeToString(plainSum[:]))
	if err != nil {
		t.Fatal(err)
	}
	s.hook = httptest.NewServer(apitest.Conform(t, apitest.Load(t, hook.OpenAPIDocument()), nil, hook.NewHandler(s.svc, hook.Agents{agent, plain}, nil, logger, hook.NewMetrics(prometheus.NewRegistry()))))
	t.Cleanup(s.hook.Close)

	client := slack.New("xoxb-test", slack.OptionAPIURL(s.fake.URL()+"/"), slack.OptionHTTPClient(&http.Client{Timeout: 5 * time.Second}))
	exec := executor.New(executor.Config{DB: store.NewLedger(db, store.Options{}), Logger: logger, Metrics: executor.NewMetrics(prometheus.NewRegistry())})
	s.bot = bot.New(bot.Config{Slack: client, Review: s.svc, Cards: store.NewLedger(db, store.Options{}), Lookup: lookup.Service{DB: store.NewLedger(db, store.Options{})}, Groups: s.groups, SigningSecrets: []string{"surface-secret"}, Resolver: exec,
		Logger: logger, PostInterval: -1, Metrics: bot.NewMetrics(s.metrics)})
	mux := http.NewServeMux()
	mux.Handle("POST /slack/interactions", s.bot.Interactions())
	s.slack = httptest.NewServer(mux)
	t.Cleanup(s.slack.Close)
	t.Cleanup(s.bot.Wait)
	return s
}

// noteSchema requires a non-empty text.
func noteSchema(t *testing.T) *approvals.EffectSchema {
	t.Helper()
	schema, err := approvals.CompileEffectSchema("crm.note", []byte(`{"type":"object","required":["text"],"properties":{"text":{"type":"string","minLength":1}}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	return schema
}

// unreachableURL is a migrated database's URL with a port nothing listens on.
func unreachableURL(t *testing.T) string {
	t.Helper()
	return storetest.UnreachableURL(t, storetest.NewURL(t))
}

// pending submits a fresh request, made for forWhom.
func (s *surfaces) pending(t *testing.T) store.Request {
	t.Helper()
	return approvalstest.Submit(t, s.svc, "billing-agent", approvalstest.Intent(&approvalstest.IntentOpts{
		RunID: new(fmt.Sprintf("r-surface-%d", s.runs.Add(1))), Step: new(`1`), Tool: new(surfaceTool), RequestedFor: new(forWhom),
	}))
}

// removeApprover reloads the configuration without user among the surface
// tool's approvers, and returns what puts it back.
func (s *surfaces) removeApprover(user string) (restore func()) {
	tools := maps.Clone(s.svc.Tools)
	tool := tools[surfaceTool]
	tool.Approvers = slices.DeleteFunc(slices.Clone(tool.Approvers), func(id string) bool { return id == user })
	tools[surfaceTool] = tool
	s.svc.Reconfigure(tools, nil)
	return func() { s.svc.Reconfigure(s.svc.Tools, nil) }
}

// decided is a fresh request that deciderA has approved.
func (s *surfaces) decided(t *testing.T) store.Request {
	t.Helper()
	req := s.pending(t)
	out, err := s.svc.Decide(context.Background(), approvals.Decision{RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash,
		Verdict: store.VerdictApprove, DecidedBy: deciderA, Via: "slack"})
	if err != nil || !out.Created {
		t.Fatalf("approving: %v", err)
	}
	return out.Request
}

// standing is one request deciderA approved, the same on every call.
func (s *surfaces) standing(t *testing.T) store.Request {
	t.Helper()
	if s.approved == nil {
		req := s.decided(t)
		s.approved = &req
	}
	return *s.approved
}

func intentBody(key string, amount int) []byte {
	return fmt.Appendf(nil, `{"run_id":"r-key","step":1,"tool":"billing.credit","idempotency_key":%q,"effect":{"invoice":"inv_1","amount_cents":%d}}`, key, amount)
}

func buttonValue(id string, round int, hash string) string {
	v, _ := json.Marshal(map[string]any{"r": id, "n": round, "h": hash})
	return string(v)
}

// hookCall calls the agent hook and returns its error body; a refusal's
// status must be the one hook.Status gives its code.
func (s *surfaces) hookCall(t *testing.T, method, path, token string, body []byte) answer {
	t.Helper()
	resp := s.hookSend(t, method, path, token, body)
	defer resp.Body.Close()
	var e struct {
		Error answer `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatalf("%s %s: %d, not an error body: %v", method, path, resp.StatusCode, err)
	}
	if resp.StatusCode < 400 {
		t.Fatalf("%s %s answered %d", method, path, resp.StatusCode)
	}
	if _, ok := approvals.RefusalByCode(e.Error.Code); ok && hook.Status(e.Error.Code) != resp.StatusCode {
		t.Errorf("%s answered %d, want %d", e.Error.Code, resp.StatusCode, hook.Status(e.Error.Code))
	}
	return e.Error
}

// hookSend calls the agent hook as the agent holding token.
func (s *surfaces) hookSend(t *testing.T, method, path, token string, body []byte) *http.Response {
	t.Helper()
	r, err := http.NewRequest(method, s.hook.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// mentions are Slack's rendering of a person; the words hold the id.
var mentions = regexp.MustCompile(`<@([A-Z0-9]+)>`)

// click sends a signed button click as user and returns the ephemeral answer,
// with the code the bot counted it under.
func (s *surfaces) click(t *testing.T, user, actionID, value string) answer {
	t.Helper()
	before := s.outcomes(t)
	sent := len(s.fake.Calls("chat.postEphemeral"))
	body := bottest.ClickForm(bottest.ClickPayload(user, surfaceChannel, actionID, value))
	r, err := http.NewRequest(http.MethodPost, s.slack.URL+"/slack/interactions", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header = bottest.Sign("surface-secret", time.Now(), body)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the click answered %d", resp.StatusCode)
	}
	s.bot.Wait()
	calls := s.fake.Calls("chat.postEphemeral")
	if len(calls) != sent+1 || calls[len(calls)-1].Form.Get("user") != user {
		t.Fatalf("%d ephemeral answers after the click, want one to %s", len(calls)-sent, user)
	}
	text := mentions.ReplaceAllString(calls[len(calls)-1].Form.Get("text"), "$1")
	text = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(text)
	var code string
	for outcome, n := range s.outcomes(t) {
		if n > before[outcome] {
			code = outcome
		}
	}
	return answer{Code: code, Message: text}
}

// outcomes reads the bot's interaction counter by outcome.
func (s *surfaces) outcomes(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := s.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "countersign_slack_interactions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// inboxSite is an inbox deciding as one reviewer, with a browser's session.
type inboxSite struct {
	server *httptest.Server
	client *http.Client
}

func (s *surfaces) inbox(t *testing.T, reviewer string) *inboxSite {
	t.Helper()
	if site, ok := s.inboxes[reviewer]; ok {
		return site
	}
	h := inbox.New(inbox.Options{Service: s.svc, Reviewer: reviewer, Logger: slog.New(slog.DiscardHandler)})
	mux := http.NewServeMux()
	mux.Handle(inbox.DefaultPrefix+"/", h)
	server := httptest.NewServer(mux)
	s.cleanup(server.Close)
	jar, _ := cookiejar.New(nil)
	site := &inboxSite{server: server, client: &http.Client{Timeout: 10 * time.Second, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	resp, err := site.client.Get(h.EntryURL(server.URL))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the inbox entry link answered %d", resp.StatusCode)
	}
	s.inboxes[reviewer] = site
	return site
}

// inboxNotice is the code and words of the notice or error an inbox page
// shows.
var inboxNotice = regexp.MustCompile(`data-code="([a-z_]+)">([^<]*)</p>`)

// decide posts the inbox's Approve form as reviewer and returns the refusal
// the page it leads to shows.
func (s *surfaces) decide(t *testing.T, reviewer, requestID string, round int, hash string) answer {
	t.Helper()
	site := s.inbox(t, reviewer)
	form := url.Values{"request_id": {requestID}, "round": {fmt.Sprint(round)}, "payload_hash": {hash}, "verdict": {"approve"}}
	r, err := http.NewRequest(http.MethodPost, site.server.URL+inbox.DefaultPrefix+"/decide", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := site.client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusSeeOther {
		resp.Body.Close()
		if resp, err = site.client.Get(site.server.URL + resp.Header.Get("Location")); err != nil {
			t.Fatal(err)
		}
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := inboxNotice.FindSubmatch(page)
	if m == nil {
		t.Fatalf("the inbox page (%d) shows no refusal:\n%s", resp.StatusCode, page)
	}
	code := string(m[1])
	if _, ok := approvals.RefusalByCode(code); ok && resp.StatusCode != http.StatusOK && hook.Status(code) != resp.StatusCode {
		t.Errorf("the inbox answered %s with %d, want %d", code, resp.StatusCode, hook.Status(code))
	}
	return answer{Code: code, Message: html.UnescapeString(string(m[2]))}
}
