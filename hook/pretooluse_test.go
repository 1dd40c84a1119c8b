package hook

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/hook/apitest"
	"github.com/countersign/countersign/receipt"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/embedded"
	"github.com/countersign/countersign/wire"
)

// The countersign tools Claude Code's Bash and Write map to: both execute:
// agent, their writes performed by Claude Code itself.
const (
	shellTool = "shell.exec"
	fsTool    = "fs.write"
)

// expr compiles a CEL tier condition.
func expr(t *testing.T, source string) *approvals.Expression {
	t.Helper()
	e, err := approvals.CompileExpression(source)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// withCodingTools adds shell.exec and fs.write to b's service: recursive
// deletes and .env files are denied, listings and /tmp writes allowed, the
// rest asked of approverA.
func (b *bundle) withCodingTools(t *testing.T) {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b.svc.Receipts = receipt.NewKeySet(key)
	b.svc.Tools[shellTool] = approvals.Tool{Name: shellTool, Approvers: []string{approverA}, RequestTTL: time.Hour, MaxAttempts: 1,
		Execute: approvals.ExecuteAgent, RejectReason: approvals.ReasonOptional, Tiers: []approvals.Tier{
			{Name: "recursive-delete", When: expr(t, `effect.command.contains("rm -rf")`), Verdict: approvals.VerdictDeny,
				Deny: "Recursive deletes are never run from a coding agent."},
			{Name: "listing", When: expr(t, `effect.command.startsWith("ls ")`), Verdict: approvals.VerdictAllow},
		}}
	b.svc.Tools[fsTool] = approvals.Tool{Name: fsTool, Approvers: []string{approverA}, RequestTTL: time.Hour, MaxAttempts: 1,
		Execute: approvals.ExecuteAgent, RejectReason: approvals.ReasonOptional, Tiers: []approvals.Tier{
			{Name: "secrets", When: expr(t, `effect.file_path.endsWith(".env")`), Verdict: approvals.VerdictDeny,
				Deny: "Secrets files are edited by hand."},
			{Name: "scratch", When: expr(t, `effect.file_path.startsWith("/tmp/")`), Verdict: approvals.VerdictAllow},
		}}
}

// codingHooks maps Bash and Write, and every MCP filesystem tool, to the
// coding tools.
func codingHooks(wait time.Duration, unmapped string) ToolHooks {
	return ToolHooks{Wait: wait, Unmapped: unmapped, Tools: map[string]string{"Bash": shellTool, "Write": fsTool, "mcp__fs__*": fsTool}}
}

// withToolHooks returns b served by a hook whose permission hooks map as
// hooks says, on the same service and database, its answers checked
// against the document and recorded in answers (b's when nil).
func (b *bundle) withToolHooks(t *testing.T, hooks ToolHooks, answers *apitest.Recorder) *bundle {
	t.Helper()
	if answers == nil {
		answers = b.answers
	}
	sum := sha256.Sum256([]byte(testToken))
	agent, err := ParseAgent("billing-agent", hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(b.svc, Agents{agent}, b.listener, slog.New(slog.DiscardHandler), NewMetrics(prometheus.NewRegistry()))
	h.SetToolHooks(hooks)
	server := httptest.NewServer(apitest.Conform(t, document(t), answers, h))
	t.Cleanup(server.Close)
	c := *b
	c.server = server
	return &c
}

// recorded is a recorded Claude Code hook input from testdata, with the
// changes set makes to it (a nil value removes the field).
func recorded(t *testing.T, name string, set map[string]any) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "claudecode", name))
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		if v == nil {
			delete(in, k)
			continue
		}
		if field, ok := strings.CutPrefix(k, "tool_input."); ok {
			in["tool_input"].(map[string]any)[field] = v
			continue
		}
		in[k] = v
	}
	out, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// hookAnswer is a PreToolUse answer.
type hookAnswer struct {
	HookSpecificOutput struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

// preToolUse posts a PreToolUse input and returns the decision and its reason.
func (b *bundle) preToolUse(t *testing.T, body string) (string, string) {
	t.Helper()
	got := b.do(t, http.MethodPost, "/v1/hooks/pretooluse", testToken, strings.NewReader(body), nil)
	if got.status != http.StatusOK {
		t.Fatalf("pretooluse = %d %s", got.status, got.body)
	}
	var a hookAnswer
	if err := json.Unmarshal(got.body, &a); err != nil {
		t.Fatal(err)
	}
	if a.HookSpecificOutput.HookEventName != "PreToolUse" {
		t.Errorf("hookEventName = %q", a.HookSpecificOutput.HookEventName)
	}
	return a.HookSpecificOutput.PermissionDecision, a.HookSpecificOutput.PermissionDecisionReason
}

// keyIn returns the request key a reason names.
func keyIn(t *testing.T, reason string) string {
	t.Helper()
	i := strings.Index(reason, "wa_")
	if i < 0 {
		t.Fatalf("the reason names no request: %q", reason)
	}
	key := reason[i:]
	if j := strings.IndexAny(key, " ).,"); j >= 0 {
		key = key[:j]
	}
	return key
}

// The recorded Bash and Write calls get each of the policy's verdicts: a
// deny with the rule's words, an allow by the rule, and an ask that posts a
// card and, undecided within the wait, answers ask naming the request.
func TestPreToolUseAnswersFromPolicy(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.withCodingTools(t)
		const wait = 2 * time.Second
		c := b.withToolHooks(t, codingHooks(wait, ""), nil)
		for _, tc := range []struct {
			name, file string
			set        map[string]any
			decision   string
			words      []string
		}{
			{"bash deny", "pretooluse_bash.json", map[string]any{"tool_input.command": "rm -rf node_modules", "tool_use_id": "toolu_d1"},
				PermissionDeny, []string{"recursive-delete", "Recursive deletes are never run from a coding agent."}},
			{"bash allow", "pretooluse_bash.json", map[string]any{"tool_input.command": "ls -la src", "tool_use_id": "toolu_a1"},
				PermissionAllow, []string{"policy listing"}},
			{"bash ask", "pretooluse_bash.json", nil, PermissionAsk, []string{"awaits an approver", "card"}},
			{"write deny", "pretooluse_write.json", map[string]any{"tool_input.file_path": "/home/dev/shop/.env", "tool_use_id": "toolu_d2"},
				PermissionDeny, []string{"secrets", "Secrets files are edited by hand."}},
			{"write allow", "pretooluse_write.json", map[string]any{"tool_input.file_path": "/tmp/notes.md", "tool_use_id": "toolu_a2"},
				PermissionAllow, []string{"policy scratch"}},
			{"write ask", "pretooluse_write.json", nil, PermissionAsk, []string{"awaits an approver"}},
		} {
			start := time.Now()
			decision, reason := c.preToolUse(t, recorded(t, tc.file, tc.set))
			if decision != tc.decision {
				t.Errorf("%s: decision %q (%s), want %q", tc.name, decision, reason, tc.decision)
			}
			for _, w := range tc.words {
				if !strings.Contains(reason, w) {
					t.Errorf("%s: reason %q lacks %q", tc.name, reason, w)
				}
			}
			// A policy verdict answers at once; an ask waits the whole wait.
			took := time.Since(start)
			if tc.decision != PermissionAsk && took >= wait {
				t.Errorf("%s: a policy verdict took %s: it waited", tc.name, took)
			}
			if tc.decision == PermissionAsk && took < wait {
				t.Errorf("%s: ask after %s, before the wait of %s ended", tc.name, took, wait)
			}
			key := keyIn(t, reason)
			v := c.do(t, http.MethodGet, "/v1/requests/"+key, testToken, nil, nil).view(t)
			var in map[string]json.RawMessage
			if err := json.Unmarshal([]byte(recorded(t, tc.file, tc.set)), &in); err != nil {
				t.Fatal(err)
			}
			if v.RunID != "9f2c1e7a-4b3d-4c8e-9a61-2f5d7b0c3e11" || string(v.Step) != string(in["tool_use_id"]) ||
				!strings.HasPrefix(v.Summary, "Claude Code ") {
				t.Errorf("%s: request run %q step %s summary %q", tc.name, v.RunID, v.Step, v.Summary)
			}
			if got, want := canonical(t, v.Effect), canonical(t, in["tool_input"]); got != want {
				t.Errorf("%s: effect %s, want the tool_input %s", tc.name, got, want)
			}
		}
		// The two asks posted a card each; the verdicts of policy none.
		b.countRows(t, 2, `SELECT count(*) FROM outbox WHERE kind = $1`, string(store.OutboxPostCard))
	})
}

func canonical(t *testing.T, raw []byte) string {
	t.Helper()
	c, err := approvals.Canonicalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

// decideWhenAsked waits for the one pending request of a call that is
// waiting, then decides it as approverA.
func (b *bundle) decideWhenAsked(t *testing.T, verdict store.Verdict, reason string) <-chan error {
	done := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			reqs, err := b.store.ListRequests(b.ctx, store.ListRequestsParams{Status: store.RequestPending, Limit: 10})
			if err != nil {
				done <- err
				return
			}
			if len(reqs) == 1 {
				_, err := b.svc.Decide(b.ctx, approvals.Decision{RequestID: reqs[0].ID, Round: 1, PayloadHash: reqs[0].PayloadHash,
					Verdict: verdict, DecidedBy: approverA, Via: "slack", Reason: reason})
				done <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		done <- context.DeadlineExceeded
	}()
	return done
}

// A person who approves within the wait lets the waiting call run: allow,
// naming the approver and the request; the same call again is answered
// from the decision at once.
func TestPreToolUseApprovedWithinTheWait(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.withCodingTools(t)
		c := b.withToolHooks(t, codingHooks(20*time.Second, ""), nil)
		decided := b.decideWhenAsked(t, store.VerdictApprove, "")
		body := recorded(t, "pretooluse_bash.json", nil)
		start := time.Now()
		decision, reason := c.preToolUse(t, body)
		if err := <-decided; err != nil {
			t.Fatal(err)
		}
		if decision != PermissionAllow || !strings.Contains(reason, approverA) || !strings.Contains(reason, "Approved by") {
			t.Fatalf("approved call = %q %q", decision, reason)
		}
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("the call answered after %s: it did not wake at the decision", took)
		}
		key := keyIn(t, reason)
		again, againReason := c.preToolUse(t, body)
		if again != PermissionAllow || keyIn(t, againReason) != key {
			t.Errorf("the same call again = %q %q", again, againReason)
		}
		b.countRows(t, 1, `SELECT count(*) FROM requests`)
	})
}

// A person who rejects within the wait denies the call, with their reason.
func TestPreToolUseRejectedWithinTheWait(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.withCodingTools(t)
		c := b.withToolHooks(t, codingHooks(20*time.Second, ""), nil)
		decided := b.decideWhenAsked(t, store.VerdictReject, "Not on staging today: the freeze is on.")
		decision, reason := c.preToolUse(t, recorded(t, "pretooluse_write.json", nil))
		if err := <-decided; err != nil {
			t.Fatal(err)
		}
		if decision != PermissionDeny || !strings.Contains(reason, "Not on staging today: the freeze is on.") || !strings.Contains(reason, approverA) {
			t.Fatalf("rejected call = %q %q", decision, reason)
		}
	})
}

// A call still pending when the wait ends is ask, never allow; decided
// later on its card, the same call (its tool_use_id) is answered from the
// decision.
func TestPreToolUseUndecidedAsksThenFollowsTheCard(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.withCodingTools(t)
		c := b.withToolHooks(t, codingHooks(150*time.Millisecond, ""), nil)
		body := recorded(t, "pretooluse_bash.json", nil)
		start := time.Now()
		decision, reason := c.preToolUse(t, body)
		if decision != PermissionAsk || time.Since(start) < 150*time.Millisecond {
			t.Fatalf("undecided call = %q %q after %s", decision, reason, time.Since(start))
		}
		key := keyIn(t, reason)
		v := c.do(t, http.MethodGet, "/v1/requests/"+key, testToken, nil, nil).view(t)
		if v.Status != wire.StatusPending {
			t.Fatalf("request %s is %s", key, v.Status)
		}
		if _, err := b.svc.Decide(b.ctx, approvals.Decision{RequestID: v.ID, Round: 1, PayloadHash: v.PayloadHash,
			Verdict: store.VerdictReject, DecidedBy: approverA, Via: "slack", Reason: "Use the migration runbook."}); err != nil {
			t.Fatal(err)
		}
		if again, r := c.preToolUse(t, body); again != PermissionDeny || !strings.Contains(r, "Use the migration runbook.") {
			t.Errorf("the same call after the card's reject = %q %q", again, r)
		}
	})
}

// A tool with no mapping gets the configured answer, ask by default, and
// no request; a glob maps an MCP tool.
func TestPreToolUseUnmappedToolsGetTheDefault(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.withCodingTools(t)
		read := recorded(t, "pretooluse_bash.json", map[string]any{"tool_name": "Read", "tool_input": map[string]any{"file_path": "/home/dev/shop/go.mod"}})
		for unmapped, want := range map[string]string{"": PermissionAsk, PermissionDeny: PermissionDeny, PermissionAllow: PermissionAllow} {
			c := b.withToolHooks(t, codingHooks(100*time.Millisecond, unmapped), nil)
			if decision, reason := c.preToolUse(t, read); decision != want || !strings.Contains(reason, "maps no tool for Read") {
				t.Errorf("unmapped %q: Read = %q %q", unmapped, decision, reason)
			}
		}
		b.countRows(t, 0, `SELECT count(*) FROM requests`)
		c := b.withToolHooks(t, codingHooks(100*time.Millisecond, PermissionDeny), nil)
		mcp := recorded(t, "pretooluse_write.json", map[string]any{"tool_name": "mcp__fs__write_file", "tool_input.file_path": "/tmp/x.txt"})
		if decision, reason := c.preToolUse(t, mcp); decision != PermissionAllow || !strings.Contains(reason, "policy scratch") {
			t.Errorf("mcp__fs__write_file = %q %q", decision, reason)
		}
		// Without a tool_use_id, the step is a digest of the tool and its
		// input: the same call again is the same request.
		noID := recorded(t, "pretooluse_bash.json", map[string]any{"tool_use_id": nil, "tool_input.command": "ls -1"})
		_, first := c.preToolUse(t, noID)
		_, second := c.preToolUse(t, noID)
		if keyIn(t, first) != keyIn(t, second) {
			t.Errorf("the same call without a tool_use_id made two requests: %q, %q", first, second)
		}
		v := c.do(t, http.MethodGet, "/v1/requests/"+keyIn(t, first), testToken, nil, nil).view(t)
		if !strings.HasPrefix(string(v.Step), `"sha256:`) {
			t.Errorf("step without a tool_use_id = %s", v.Step)
		}
	})
}

// PostToolUse records the outcome of the approved call once: twice is
// one; PostToolUseFailure records a failure; a call with no request
// records nothing.
func TestPostToolUseRecordsTheOutcomeOnce(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.withCodingTools(t)
		c := b.withToolHooks(t, codingHooks(100*time.Millisecond, ""), nil)
		scratch := map[string]any{"tool_input.file_path": "/tmp/flags.json"}
		decision, reason := c.preToolUse(t, recorded(t, "pretooluse_write.json", scratch))
		if decision != PermissionAllow {
			t.Fatalf("write = %q %q", decision, reason)
		}
		key := keyIn(t, reason)
		post := recorded(t, "posttooluse_write.json", scratch)
		for i := range 2 {
			got := c.do(t, http.MethodPost, "/v1/hooks/posttooluse", testToken, strings.NewReader(post), nil)
			if got.status != http.StatusOK || strings.TrimSpace(string(got.body)) != "{}" {
				t.Fatalf("posttooluse %d = %d %s", i+1, got.status, got.body)
			}
		}
		v := c.do(t, http.MethodGet, "/v1/requests/"+key, testToken, nil, nil).view(t)
		if v.Execution == nil || v.Execution.State != wire.ExecSucceeded || !v.Settled {
			t.Fatalf("execution after PostToolUse = %+v", v.Execution)
		}
		events, err := b.store.EventsFor(b.ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		succeeded := 0
		for _, e := range events {
			if e.Kind == store.EventSucceeded {
				succeeded++
			}
		}
		if succeeded != 1 {
			t.Errorf("%d succeeded events, want 1", succeeded)
		}

		// A listing allowed by policy, then failed.
		listing := map[string]any{"tool_input.command": "ls -la /nowhere", "tool_use_id": "toolu_ls"}
		_, reason = c.preToolUse(t, recorded(t, "pretooluse_bash.json", listing))
		listing["hook_event_name"] = "PostToolUseFailure"
		listing["tool_response"] = nil
		listing["error"] = "ls: cannot access '/nowhere': No such file or directory"
		got := c.do(t, http.MethodPost, "/v1/hooks/posttooluse", testToken, strings.NewReader(recorded(t, "posttooluse_bash.json", listing)), nil)
		if got.status != http.StatusOK {
			t.Fatalf("posttoolusefailure = %d %s", got.status, got.body)
		}
		failed := c.do(t, http.MethodGet, "/v1/requests/"+keyIn(t, reason), testToken, nil, nil).view(t)
		if failed.Execution == nil || failed.Execution.State != wire.ExecFailed {
			t.Errorf("execution after PostToolUseFailure = %+v", failed.Execution)
		}
		// The recorded Bash call was never asked: nothing to record.
		before := b.count(t, `SELECT count(*) FROM events`)
		if got := c.do(t, http.MethodPost, "/v1/hooks/posttooluse", testToken, strings.NewReader(recorded(t, "posttooluse_bash.json", nil)), nil); got.status != http.StatusOK {
			t.Errorf("posttooluse without a request = %d %s", got.status, got.body)
		}
		b.countRows(t, before, `SELECT count(*) FROM events`)
	})
}

// How a PostToolUse input decides the outcome.
func TestPostToolUseOutcomeOfTheResponse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   toolUseInput
		want string
	}{
		{toolUseInput{HookEventName: "PostToolUse", ToolResponse: json.RawMessage(`{"stdout":"ok","interrupted":false}`)}, wire.OutcomeSucceeded},
		{toolUseInput{HookEventName: "PostToolUse", ToolResponse: json.RawMessage(`{"stdout":"","interrupted":true}`)}, wire.OutcomeFailed},
		{toolUseInput{HookEventName: "PostToolUse", ToolResponse: json.RawMessage(`{"content":[],"isError":true}`)}, wire.OutcomeFailed},
		{toolUseInput{HookEventName: "PostToolUse", ToolResponse: json.RawMessage(`{"success":false}`)}, wire.OutcomeFailed},
		{toolUseInput{HookEventName: "PostToolUse", ToolResponse: json.RawMessage(`"done"`)}, wire.OutcomeSucceeded},
		{toolUseInput{HookEventName: "PostToolUseFailure", Error: json.RawMessage(`"exit 1"`)}, wire.OutcomeFailed},
	} {
		if got := tc.in.outcome(); got.Status != tc.want {
			t.Errorf("%s %s = %s (%s), want %s", tc.in.HookEventName, tc.in.ToolResponse, got.Status, got.Detail, tc.want)
		}
	}
	long := toolUseInput{HookEventName: "PostToolUseFailure", Error: json.RawMessage(`"` + strings.Repeat("é", 2000) + `"`)}
	if d := long.outcome().Detail; len(d) > maxFailureDetail+200 || !strings.HasSuffix(d, "…") {
		t.Errorf("a long error's detail is %d bytes", len(d))
	}
}

// Input that is not a hook's is refused with the API's envelope and its
// stable codes.
func TestToolHooksRefuseBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.withCodingTools(t)
	c := b.withToolHooks(t, codingHooks(100*time.Millisecond, ""), nil)
	for route, file := range map[string]string{"/v1/hooks/pretooluse": "pretooluse_bash.json", "/v1/hooks/posttooluse": "posttooluse_bash.json"} {
		for _, tc := range []struct {
			body, token string
			header      map[string]string
			status      int
			code, field string
		}{
			{`{"tool_name":`, testToken, nil, http.StatusBadRequest, approvals.CodeMalformedJSON, ""},
			{recorded(t, file, nil), "wrong", nil, http.StatusUnauthorized, approvals.CodeUnauthorized, ""},
			{recorded(t, file, nil), testToken, map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType, approvals.CodeUnsupportedMediaType, ""},
			{recorded(t, file, map[string]any{"tool_name": nil}), testToken, nil, http.StatusUnprocessableEntity, approvals.CodeInvalidRequest, "tool_name"},
			{recorded(t, file, map[string]any{"tool_input": []any{}}), testToken, nil, http.StatusUnprocessableEntity, approvals.CodeInvalidRequest, "tool_input"},
			{recorded(t, file, map[string]any{"session_id": 7}), testToken, nil, http.StatusUnprocessableEntity, approvals.CodeInvalidRequest, "session_id"},
			{recorded(t, file, map[string]any{"hook_event_name": "Stop"}), testToken, nil, http.StatusUnprocessableEntity, approvals.CodeInvalidRequest, "hook_event_name"},
			{`[]`, testToken, nil, http.StatusUnprocessableEntity, approvals.CodeInvalidRequest, ""},
			{`{"x":"` + strings.Repeat("a", 4*approvals.MaxBodyBytes) + `"}`, testToken, nil, http.StatusRequestEntityTooLarge, approvals.CodeTooLarge, ""},
		} {
			got := c.do(t, http.MethodPost, route, tc.token, strings.NewReader(tc.body), tc.header)
			var e wire.ErrorBody
			_ = json.Unmarshal(got.body, &e)
			if got.status != tc.status || e.Error.Code != tc.code || e.Error.Field != tc.field {
				t.Errorf("%s %.60s = %d %s, want %d %s field %q", route, tc.body, got.status, got.body, tc.status, tc.code, tc.field)
			}
		}
	}
	// A hook event the other route takes is refused by this one.
	post := recorded(t, "posttooluse_bash.json", nil)
	if got := c.do(t, http.MethodPost, "/v1/hooks/pretooluse", testToken, strings.NewReader(post), nil); got.status != http.StatusUnprocessableEntity {
		t.Errorf("a PostToolUse input on pretooluse = %d %s", got.status, got.body)
	}
	// A NUL in the tool's input is refused naming it, as in any effect.
	nul := recorded(t, "pretooluse_bash.json", map[string]any{"tool_input.command": "echo \x00"})
	got := c.do(t, http.MethodPost, "/v1/hooks/pretooluse", testToken, strings.NewReader(nul), nil)
	if got.status != http.StatusUnprocessableEntity || !strings.Contains(string(got.body), "/tool_input/command") {
		t.Errorf("a NUL in tool_input = %d %s", got.status, got.body)
	}
	b.countRows(t, 0, `SELECT count(*) FROM requests`)
}

// exerciseToolHooks provokes every answer the document promises for the
// permission hooks, recorded in b's answers (TestOpenAPIConformance).
func exerciseToolHooks(t *testing.T, b *bundle) {
	t.Helper()
	b.withCodingTools(t)
	c := b.withToolHooks(t, codingHooks(50*time.Millisecond, ""), nil)
	scratch := map[string]any{"tool_input.file_path": "/tmp/conformance.txt", "tool_use_id": "toolu_conf"}
	c.preToolUse(t, recorded(t, "pretooluse_write.json", scratch))
	post := recorded(t, "posttooluse_write.json", scratch)
	scratch["hook_event_name"] = "PostToolUseFailure"
	scratch["error"] = "disk full"
	failure := recorded(t, "posttooluse_write.json", scratch)
	for _, route := range []string{"/v1/hooks/pretooluse", "/v1/hooks/posttooluse"} {
		for _, call := range []struct {
			body, token string
			header      map[string]string
		}{
			{`{"tool_name":`, testToken, nil},
			{`{}`, "wrong", nil},
			{`{}`, testToken, map[string]string{"Content-Type": "text/plain"}},
			{`{}`, testToken, nil},
			{strings.Repeat(" ", 4*approvals.MaxBodyBytes+1), testToken, nil},
		} {
			c.do(t, http.MethodPost, route, call.token, strings.NewReader(call.body), call.header)
		}
	}
	for _, body := range []string{post, post, failure} { // recorded, the same again, another (409)
		c.do(t, http.MethodPost, "/v1/hooks/posttooluse", testToken, strings.NewReader(body), nil)
	}
	down := closedToolHooks(t, b.answers)
	pre := recorded(t, "pretooluse_write.json", nil)
	for route, body := range map[string]string{"/v1/hooks/pretooluse": pre, "/v1/hooks/posttooluse": post} {
		if got := down.do(t, http.MethodPost, route, testToken, strings.NewReader(body), nil); got.status != http.StatusServiceUnavailable {
			t.Errorf("%s on a closed store = %d %s", route, got.status, got.body)
		}
	}
}

// closedToolHooks is a hook mapping Write to fs.write whose embedded store
// has been closed: a mapped call answers 503.
func closedToolHooks(t *testing.T, answers *apitest.Recorder) *bundle {
	t.Helper()
	s, err := embedded.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	svc := approvalstest.New(t, approvals.Config{DB: store.NewLedger(s, store.Options{}), Logger: logger, Tools: map[string]approvals.Tool{
		fsTool: {Name: fsTool, Approvers: []string{approverA}, RequestTTL: time.Hour, Execute: approvals.ExecuteAgent}}})
	notifier, _, _ := s.Notifier(logger)
	b := &bundle{svc: svc, listener: notifier}
	c := b.withToolHooks(t, codingHooks(50*time.Millisecond, ""), answers)
	s.Close()
	return c
}
