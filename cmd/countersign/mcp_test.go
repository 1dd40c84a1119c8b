package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store/storetest"
)

// envMCPProcess makes the test binary run `countersign mcp` (TestMain), the
// command the TypeScript client spawns in the stdio test.
const envMCPProcess = "COUNTERSIGN_TEST_MCP_PROCESS"

// mcpCallTimeout is the stdio server's --call-timeout in the tests: short,
// so a countersign out of reach is reported quickly.
const mcpCallTimeout = "2s"

const (
	mcpToken      = "mcp-test-agent-token"
	mcpOtherToken = "mcp-test-other-agent-token"
	mcpTool       = "mcp.credit"
)

const mcpDispatchSecret = "mcp-test-dispatch-secret"

// mcpConfig is the configuration of the MCP tests: two agents and a tool
// with an effect schema (with a local $ref), dispatching to providerURL.
func mcpConfig(t *testing.T, providerURL string) string {
	t.Helper()
	sum := func(token string) string { s := sha256.Sum256([]byte(token)); return hex.EncodeToString(s[:]) }
	return writeConfig(t, fmt.Sprintf(`
agents:
  - {name: mcp-agent, token_sha256: %s}
  - {name: other-agent, token_sha256: %s}
tools:
  %s:
    approvers: [%s]
    description: Credit an invoice, in cents.
    dispatch: {url: "%s/credits", timeout: 5s}
    effect_schema:
      type: object
      required: [invoice, amount_cents, currency]
      additionalProperties: false
      properties:
        invoice: {type: string, pattern: "^inv_[a-z0-9]+$"}
        amount_cents: {type: integer, minimum: 1}
        currency: {$ref: "#/$defs/currency"}
      $defs:
        currency: {enum: [USD, EUR]}
`, sum(mcpToken), sum(mcpOtherToken), mcpTool, config.DefaultInboxReviewer, providerURL))
}

// mcpGate is serve on the embedded store with a tool that has an effect
// schema (with a local $ref), dispatching to a fake provider, and the
// review inbox to approve through.
type mcpGate struct {
	base    string
	logs    *syncBuffer
	browser *http.Client
}

func startMCPGate(t *testing.T) *mcpGate {
	t.Helper()
	provider := providertest.Start(t, providertest.New())
	base, logs := startServeWith(t, envFrom(map[string]string{
		"COUNTERSIGN_CONFIG":          mcpConfig(t, provider.URL),
		"COUNTERSIGN_DATA_DIR":        t.TempDir(),
		"COUNTERSIGN_DISPATCH_SECRET": mcpDispatchSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
		"COUNTERSIGN_LOG_FORMAT":      "json",
	}))
	g := &mcpGate{base: base, logs: logs, browser: newBrowserClient()}
	enterInbox(t, g.browser, inboxEntry(t, logs))
	return g
}

// approve approves the request in the review inbox, as the reviewer would.
func (g *mcpGate) approve(t *testing.T, req mcpRequest) {
	t.Helper()
	form := url.Values{"request_id": {req.ID}, "round": {fmt.Sprint(req.Round)}, "payload_hash": {req.PayloadHash}, "verdict": {"approve"}, "confirm": {"yes"}}
	code, page := caller(t, g.browser, g.base)(http.MethodPost, "/inbox/decide", form.Encode(),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if code != http.StatusSeeOther {
		t.Errorf("approving in the inbox = %d:\n%s", code, page)
	}
}

// effectSchema is the tool's effect_schema as GET /v1/tools returns it.
func (g *mcpGate) effectSchema(t *testing.T) map[string]any {
	t.Helper()
	code, body := caller(t, http.DefaultClient, g.base)(http.MethodGet, "/v1/tools", "", map[string]string{"Authorization": "Bearer " + mcpToken})
	var list struct {
		Tools []struct {
			Name         string         `json:"name"`
			EffectSchema map[string]any `json:"effect_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &list); code != http.StatusOK || err != nil {
		t.Fatalf("GET /v1/tools = %d %s %v", code, body, err)
	}
	for _, tool := range list.Tools {
		if tool.Name == mcpTool {
			return tool.EffectSchema
		}
	}
	t.Fatalf("GET /v1/tools lacks %s: %s", mcpTool, body)
	return nil
}

// mcpRequest is what the tests read of a request in a tool's result.
type mcpRequest struct {
	ID          string `json:"id"`
	Key         string `json:"key"`
	Status      string `json:"status"`
	Round       int    `json:"round"`
	PayloadHash string `json:"payload_hash"`
	Settled     bool   `json:"settled"`
	Decision    *struct {
		By string `json:"by"`
	} `json:"decision"`
	Execution *struct {
		State       string `json:"state"`
		ProviderRef string `json:"provider_ref"`
	} `json:"execution"`
}

type mcpResult struct {
	Structured json.RawMessage `json:"structured"`
	Text       string          `json:"text"`
	IsError    bool            `json:"isError"`
}

func (r mcpResult) request(t *testing.T) mcpRequest {
	t.Helper()
	var req mcpRequest
	if err := json.Unmarshal(r.Structured, &req); err != nil || req.Key == "" {
		t.Fatalf("the result holds no request (%v): %s", err, r.Structured)
	}
	return req
}

// errorCode is the code of a tool error's envelope, and its violations' fields.
func (r mcpResult) errorCode(t *testing.T) (string, []string) {
	t.Helper()
	var body struct {
		Error struct {
			Code   string `json:"code"`
			Field  string `json:"field"`
			Errors []struct {
				Field string `json:"field"`
			} `json:"errors"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.Structured, &body); err != nil {
		t.Fatalf("the tool error has no envelope (%v): %s", err, r.Structured)
	}
	fields := []string{body.Error.Field}
	for _, e := range body.Error.Errors {
		fields = append(fields, e.Field)
	}
	return body.Error.Code, fields
}

// mcpReport is what check.mjs saw.
type mcpReport struct {
	Server           struct{ Name string }
	Tools            []string
	TypedInputSchema map[string]any
	First, Again     mcpResult
	Cancelled        mcpResult
	Outcome          mcpResult
	Progress         []struct {
		Progress float64 `json:"progress"`
		Message  string  `json:"message"`
	}
	Get  mcpResult
	List []struct {
		Requests   []mcpRequest `json:"requests"`
		NextCursor *string      `json:"next_cursor"`
	}
	ListTools   mcpResult
	UnknownTool struct {
		Thrown, McpError bool
		Code             int
		Message          string
	}
	BadEffect, StrayArgument mcpResult
	Unreachable              []mcpResult
}

// runMCPClient runs tools/mcpclient/check.mjs with env, approving and
// stopping countersign when it asks, and returns its report.
func runMCPClient(t *testing.T, g *mcpGate, env map[string]string, stopCountersign func()) mcpReport {
	t.Helper()
	env["TOOL"] = mcpTool
	var report mcpReport
	lines := runMCPScript(t, "check.mjs", env, g.logs.String, func(line []byte) bool {
		var event struct {
			Event   string     `json:"event"`
			Request mcpRequest `json:"request"`
		}
		if json.Unmarshal(line, &event) != nil {
			return false
		}
		switch event.Event {
		case "approve":
			g.approve(t, event.Request)
		case "stop_countersign":
			stopCountersign()
		case "report":
			if err := json.Unmarshal(line, &report); err != nil {
				t.Fatalf("decoding the report: %v\n%s", err, line)
			}
			return false
		default:
			return false
		}
		return true
	})
	if report.Server.Name == "" {
		t.Fatalf("check.mjs sent no report:\n%s", strings.Join(lines, "\n"))
	}
	return report
}

// checkMCPReport holds what both transports must show.
func checkMCPReport(t *testing.T, g *mcpGate, r mcpReport) {
	t.Helper()
	if r.Server.Name != "countersign" {
		t.Errorf("server name %q", r.Server.Name)
	}
	want := []string{"cancel_request", "get_request", "list_requests", "list_tools", "report_outcome", "request_mcp_credit", "request_write", "wait_for_outcome"}
	if !slices.Equal(r.Tools, want) {
		t.Errorf("tools = %v, want %v", r.Tools, want)
	}

	// The typed tool's input schema holds the bundled effect schema, its
	// local $ref rebased to where it now sits.
	effect := g.effectSchema(t)
	delete(effect, "$schema")
	effect["properties"].(map[string]any)["currency"].(map[string]any)["$ref"] = "#/properties/effect/$defs/currency"
	props, _ := r.TypedInputSchema["properties"].(map[string]any)
	if !reflect.DeepEqual(props["effect"], effect) {
		t.Errorf("the typed tool's effect schema is\n%v\nwant the bundled one\n%v", props["effect"], effect)
	}
	if req := r.TypedInputSchema["required"]; !reflect.DeepEqual(req, []any{"run_id", "step", "effect"}) || r.TypedInputSchema["additionalProperties"] != false {
		t.Errorf("the typed tool's input schema: required %v, additionalProperties %v", req, r.TypedInputSchema["additionalProperties"])
	}

	// request_write, and the retry with the same write: one request.
	first, again := r.First.request(t), r.Again.request(t)
	if first.Status != "pending" || !strings.Contains(r.First.Text, first.Key) || !strings.Contains(r.First.Text, "pending review, 0 of 1 approvals") {
		t.Errorf("request_write: %s %q", first.Status, r.First.Text)
	}
	if again.ID != first.ID || again.Key != first.Key || !strings.Contains(r.Again.Text, "already requested") {
		t.Errorf("the retry is %s (%q), want the same request %s", again.Key, r.Again.Text, first.Key)
	}
	if c := r.Cancelled.request(t); c.Status != "cancelled" || c.Key == first.Key || !strings.Contains(r.Cancelled.Text, "cancelled") {
		t.Errorf("cancel_request: %s %q", c.Status, r.Cancelled.Text)
	}

	// wait_for_outcome: progress while it waited, then the outcome.
	outcome := r.Outcome.request(t)
	if r.Outcome.IsError || !outcome.Settled || outcome.Execution == nil || outcome.Execution.State != "succeeded" || outcome.Key != first.Key {
		t.Errorf("wait_for_outcome: %s", r.Outcome.Structured)
	}
	wantText := "approved by " + config.DefaultInboxReviewer + ", executed"
	if !strings.Contains(r.Outcome.Text, wantText) {
		t.Errorf("wait_for_outcome says %q, want it to contain %q", r.Outcome.Text, wantText)
	}
	if len(r.Progress) == 0 || !strings.Contains(r.Progress[0].Message, first.Key) {
		t.Errorf("progress notifications: %+v", r.Progress)
	}
	for i := 1; i < len(r.Progress); i++ {
		if r.Progress[i].Progress <= r.Progress[i-1].Progress {
			t.Errorf("progress does not grow: %+v", r.Progress)
		}
	}
	if got := r.Get.request(t); got.Execution == nil || got.Execution.State != "succeeded" || got.ID != first.ID {
		t.Errorf("get_request: %s", r.Get.Structured)
	}
	if len(r.List) != 2 || len(r.List[0].Requests) != 1 || r.List[0].NextCursor == nil || len(r.List[1].Requests) != 1 ||
		r.List[1].NextCursor != nil || r.List[0].Requests[0].ID == r.List[1].Requests[0].ID {
		t.Errorf("list_requests, two pages of one: %+v", r.List)
	}
	if !strings.Contains(r.ListTools.Text, mcpTool+" (request_mcp_credit)") || !bytes.Contains(r.ListTools.Structured, []byte(`"effect_schema"`)) {
		t.Errorf("list_tools: %q %s", r.ListTools.Text, r.ListTools.Structured)
	}

	// Protocol errors. An unknown tool is the protocol's invalid params.
	if !r.UnknownTool.Thrown || !r.UnknownTool.McpError || r.UnknownTool.Code != -32602 || !strings.Contains(r.UnknownTool.Message, "request_nothing_such") {
		t.Errorf("the unknown tool: %+v", r.UnknownTool)
	}
	// An effect that fails the schema: a tool error with countersign's
	// code and every value at fault, named as the arguments are.
	code, fields := r.BadEffect.errorCode(t)
	if !r.BadEffect.IsError || code != "invalid_effect" || !slices.Contains(fields, "/effect/amount_cents") || !slices.Contains(fields, "/effect/currency") ||
		!strings.Contains(r.BadEffect.Text, "invalid_effect") {
		t.Errorf("the bad effect: %v %q %v %q", r.BadEffect.IsError, code, fields, r.BadEffect.Text)
	}
	if code, fields := r.StrayArgument.errorCode(t); !r.StrayArgument.IsError || code != "invalid_request" || fields[0] != "/colour" {
		t.Errorf("the stray argument: %v %q %v %q", r.StrayArgument.IsError, code, fields, r.StrayArgument.Text)
	}
}

// The stdio transport, as a runtime spawns it: `countersign mcp` as a
// client of serve (through a proxy the test can take away), driven by the
// TypeScript MCP SDK's client.
func TestMCPOverStdioWithTheTypeScriptClient(t *testing.T) {
	t.Parallel()
	g := startMCPGate(t)
	target, _ := url.Parse(g.base)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxy := &http.Server{Handler: httputil.NewSingleHostReverseProxy(target), ReadHeaderTimeout: 5 * time.Second}
	go proxy.Serve(ln)
	t.Cleanup(func() { proxy.Close() })

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	serverEnv, _ := json.Marshal(map[string]string{
		envMCPProcess:            "1",
		"COUNTERSIGN_URL":        "http://" + ln.Addr().String(),
		"COUNTERSIGN_TOKEN":      mcpToken,
		"COUNTERSIGN_LOG_FORMAT": "json",
		"PATH":                   os.Getenv("PATH"),
	})
	r := runMCPClient(t, g, map[string]string{
		"MCP_TRANSPORT": "stdio", "MCP_COMMAND": self, "MCP_ARGS": `["-test.run=^$"]`, "MCP_ENV": string(serverEnv),
	}, func() { proxy.Close() })
	checkMCPReport(t, g, r)

	// countersign out of reach: each call is a tool error naming it, and
	// the server answered the next one (and a ping) all the same.
	if len(r.Unreachable) != 2 {
		t.Fatalf("calls while countersign was away: %+v", r.Unreachable)
	}
	for _, res := range r.Unreachable {
		if code, _ := res.errorCode(t); !res.IsError || code != "unreachable" || !strings.Contains(res.Text, "connection refused") {
			t.Errorf("a call while countersign was away: %v %q %q", res.IsError, code, res.Text)
		}
	}
}

// The streamable HTTP transport at /mcp on serve, behind the agent's
// token, driven by the TypeScript MCP SDK's client.
func TestMCPOverHTTPWithTheTypeScriptClient(t *testing.T) {
	t.Parallel()
	g := startMCPGate(t)
	r := runMCPClient(t, g, map[string]string{"MCP_TRANSPORT": "http", "MCP_URL": g.base + "/mcp", "MCP_TOKEN": mcpToken}, nil)
	checkMCPReport(t, g, r)
}

// /mcp takes the agent API's tokens: without one, or with a wrong one, it
// is the API's 401; a session belongs to the agent that opened it.
func TestMCPOverHTTPIsTheAgents(t *testing.T) {
	t.Parallel()
	g := startMCPGate(t)
	post := func(token, session, body string) (*http.Response, []byte) {
		t.Helper()
		return mcpPost(t, g.base, token, session, body, nil)
	}
	initialize := mcpInitialize
	for token, challenge := range map[string]string{"": `Bearer realm="countersign"`, "not-a-token": `Bearer realm="countersign", error="invalid_token"`} {
		resp, body := post(token, "", initialize)
		var envelope struct {
			Error struct {
				Code      string `json:"code"`
				RequestID string `json:"request_id"`
			} `json:"error"`
		}
		json.Unmarshal(body, &envelope)
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != challenge || envelope.Error.Code != "unauthorized" ||
			envelope.Error.RequestID == "" || envelope.Error.RequestID != resp.Header.Get("Request-Id") {
			t.Errorf("token %q: %d, WWW-Authenticate %q, %s", token, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
	}

	resp, body := post(mcpToken, "", initialize)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" || !bytes.Contains(body, []byte(`"countersign"`)) {
		t.Fatalf("initialize = %d, session %q: %s", resp.StatusCode, session, body)
	}
	list := `{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}`
	resp, body = post(mcpOtherToken, session, list)
	checkMCPEnvelope(t, "another agent's call in the session", resp, body, http.StatusForbidden, "unauthorized")
	if resp, body := post(mcpToken, session, list); resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("request_mcp_credit")) {
		t.Errorf("the agent's own call in its session = %d %s", resp.StatusCode, body)
	}
}

// countersign mcp without the server's address or the agent's token says
// which variables to set, and serves nothing.
func TestMCPCommandNeedsTheServerAndTheToken(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"mcp"}, envFrom(map[string]string{"COUNTERSIGN_URL": "http://127.0.0.1:9"}),
		strings.NewReader(""), &stdout, &stderr)
	if code != 1 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "COUNTERSIGN_TOKEN") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
}

// A configuration whose tools would share a typed MCP tool, or give one a
// name longer than a model API takes, is refused, naming the tools.
func TestConfigRefusesTypedToolNamesThatAreNotTheirOwn(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 57)
	path := writeConfig(t, `
agents:
  - {name: billing-agent, token_sha256: "`+strings.Repeat("ab", 32)+`"}
tools:
  billing.credit:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/a"}
    effect_schema: {type: object}
  billing_credit:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/b"}
    effect_schema: {type: object}
  `+long+`:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/c"}
    effect_schema: {type: object}
  no.schema:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/d"}
  no_schema:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/e"}
`)
	cfg, err := config.Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_DISPATCH_SECRET": strings.Repeat("s", 32), "COUNTERSIGN_DATABASE_URL": "postgres://x/y"}))
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	if err == nil {
		t.Fatal("the configuration passed")
	}
	msg := err.Error()
	for _, want := range []string{"tools.billing_credit: it and tools.billing.credit would both be the MCP tool request_billing_credit",
		"tools." + long + ": its MCP tool request_" + long + " would be 65 characters"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q:\n%s", want, msg)
		}
	}
	// Tools without an effect schema get no typed tool: nothing to collide.
	if strings.Contains(msg, "no_schema") {
		t.Errorf("tools without an effect schema were refused:\n%s", msg)
	}
}

const mcpInitialize = `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}`

// mcpPost posts body to base's /mcp as the agent of token, in session
// (none when empty), with the headers a streamable HTTP client sends, as a
// reverse proxy on this machine forwards them; header adds or replaces
// (an empty value removes).
func mcpPost(t *testing.T, base, token, session, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Host = "countersign.example.com"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	if m, ok := header["Method"]; ok {
		req.Method = m
		req.Header.Del("Method")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}

// checkMCPEnvelope holds that an answer is the API's refusal: status, the
// error envelope with code, and its request_id the Request-Id header's.
func checkMCPEnvelope(t *testing.T, what string, resp *http.Response, body []byte, status int, code string) {
	t.Helper()
	var envelope struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	err := json.Unmarshal(body, &envelope)
	if resp.StatusCode != status || err != nil || envelope.Error.Code != code || envelope.Error.Message == "" ||
		envelope.Error.RequestID == "" || envelope.Error.RequestID != resp.Header.Get("Request-Id") ||
		resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("%s: %d (want %d %s), Content-Type %q, Request-Id %q: %s", what, resp.StatusCode, status, code,
			resp.Header.Get("Content-Type"), resp.Header.Get("Request-Id"), body)
	}
}

// Every refusal of /mcp is the API's envelope with a Request-Id, as
// every route's is; a message that is neither a request nor a response,
// and a body in another charset, are refused as the API would.
func TestMCPRefusalsAreTheEnvelope(t *testing.T) {
	t.Parallel()
	g := startMCPGate(t)
	resp, body := mcpPost(t, g.base, mcpToken, "", mcpInitialize, nil)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize = %d, session %q: %s", resp.StatusCode, session, body)
	}
	list := `{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}`
	for _, c := range []struct {
		what, session, body string
		header              map[string]string
		status              int
		code                string
	}{
		{"text/plain", session, list, map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"charset=utf-16", session, list, map[string]string{"Content-Type": "application/json; charset=utf-16"}, http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"malformed JSON", session, `{"jsonrpc": "2.0", "id": 2,`, nil, http.StatusBadRequest, "malformed_json"},
		{"an unknown session", "cs1.AAAA.BBBB", list, nil, http.StatusNotFound, "not_found"},
		{"a session of another server", "2f1c0e9a-7b7d-4c1e-9a55-0b9d1f7a3c21", list, nil, http.StatusNotFound, "not_found"},
		{"too large", session, `{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"x": "` + strings.Repeat("a", 2<<20) + `"}}`, nil,
			http.StatusRequestEntityTooLarge, "too_large"},
		{"GET", session, "", map[string]string{"Method": http.MethodGet}, http.StatusMethodNotAllowed, "method_not_allowed"},
		{"an id without a method", session, `{"jsonrpc": "2.0", "id": 7}`, nil, http.StatusUnprocessableEntity, "invalid_request"},
		{"a batch holding one", session, `[` + list + `, {"jsonrpc": "2.0", "id": 8, "params": {}}]`, nil, http.StatusUnprocessableEntity, "invalid_request"},
		{"no Accept", session, list, map[string]string{"Accept": ""}, http.StatusUnprocessableEntity, "invalid_request"},
		{"headers over 64 KiB", session, list, map[string]string{"X-Padding": strings.Repeat("p", 70<<10)},
			http.StatusRequestHeaderFieldsTooLarge, "too_large"},
	} {
		resp, body := mcpPost(t, g.base, mcpToken, c.session, c.body, c.header)
		checkMCPEnvelope(t, c.what, resp, body, c.status, c.code)
	}
	resp, body = mcpPost(t, g.base, mcpOtherToken, session, list, nil)
	checkMCPEnvelope(t, "another agent's token in the session", resp, body, http.StatusForbidden, "unauthorized")

	// A response (an id and a result) is still taken, and charset=utf-8 is fine.
	if resp, body := mcpPost(t, g.base, mcpToken, session, `{"jsonrpc": "2.0", "id": 9, "result": {}}`, nil); resp.StatusCode != http.StatusAccepted {
		t.Errorf("a response = %d %s", resp.StatusCode, body)
	}
	if resp, body := mcpPost(t, g.base, mcpToken, session, list, map[string]string{"Content-Type": "application/json; charset=UTF-8"}); resp.StatusCode != http.StatusOK ||
		!bytes.Contains(body, []byte("request_mcp_credit")) {
		t.Errorf("charset=UTF-8 = %d %s", resp.StatusCode, body)
	}
}

// startServeUntil runs serve with env until the returned stop is called
// (or the test ends), and returns its base URL.
func startServeUntil(t *testing.T, env map[string]string) (base string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"serve"}, envFrom(env), nil, io.Discard, logs) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case code := <-exited:
			if code != 0 {
				t.Errorf("serve exited %d: %s", code, logs.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop after its context ended")
		}
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(logs.String(), "\n") {
			if addr, ok := listeningAddr([]byte(line)); ok {
				return "http://" + addr, stop
			}
		}
		select {
		case code := <-exited:
			stopped = true
			t.Fatalf("serve exited %d: %s", code, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve never listened: %s", logs.String())
	return "", nil
}

// mcpCallTool calls tool with args in session on base, as the agent of
// token, and returns the answer's body (an SSE event or JSON).
func mcpCallTool(t *testing.T, base, token, session, tool, args string) (int, []byte) {
	t.Helper()
	resp, body := mcpPost(t, base, token, session,
		`{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "`+tool+`", "arguments": `+args+`}}`, nil)
	return resp.StatusCode, body
}

// A session opened on one replica is served by another on the same
// database, and stays its agent's there.
func TestMCPSessionCrossesReplicas(t *testing.T) {
	t.Parallel()
	provider := providertest.Start(t, providertest.New())
	env := map[string]string{
		"COUNTERSIGN_DATABASE_URL":    storetest.NewURL(t),
		"COUNTERSIGN_CONFIG":          mcpConfig(t, provider.URL),
		"COUNTERSIGN_DISPATCH_SECRET": mcpDispatchSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
		"COUNTERSIGN_LOG_FORMAT":      "json",
	}
	a, _ := startServeUntil(t, env)
	b, _ := startServeUntil(t, env)
	resp, body := mcpPost(t, a, mcpToken, "", mcpInitialize, nil)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize on A = %d, session %q: %s", resp.StatusCode, session, body)
	}
	write := `{"tool": "` + mcpTool + `", "run_id": "run-replicas", "step": 1, "effect": {"invoice": "inv_1", "amount_cents": 100, "currency": "USD"}}`
	code, body := mcpCallTool(t, b, mcpToken, session, "request_write", write)
	if code != http.StatusOK || !bytes.Contains(body, []byte(`pending review`)) || bytes.Contains(body, []byte(`"isError":true`)) {
		t.Fatalf("request_write on B in A's session = %d %s", code, body)
	}
	// And back on A, the request B stored.
	code, body = mcpCallTool(t, a, mcpToken, session, "list_requests", `{"run_id": "run-replicas"}`)
	if code != http.StatusOK || !bytes.Contains(body, []byte(`1 requests; no more pages`)) {
		t.Errorf("list_requests on A = %d %s", code, body)
	}
	resp, body = mcpPost(t, b, mcpOtherToken, session, `{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}`, nil)
	checkMCPEnvelope(t, "another agent's token in the session on B", resp, body, http.StatusForbidden, "unauthorized")
}

// A client keeps its session across a restart of the server: the next
// call after it is served.
func TestMCPSessionSurvivesARestart(t *testing.T) {
	t.Parallel()
	provider := providertest.Start(t, providertest.New())
	env := map[string]string{
		"COUNTERSIGN_CONFIG":          mcpConfig(t, provider.URL),
		"COUNTERSIGN_DATA_DIR":        t.TempDir(),
		"COUNTERSIGN_DISPATCH_SECRET": mcpDispatchSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
		"COUNTERSIGN_LOG_FORMAT":      "json",
	}
	base, stop := startServeUntil(t, env)
	resp, body := mcpPost(t, base, mcpToken, "", mcpInitialize, nil)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize = %d, session %q: %s", resp.StatusCode, session, body)
	}
	stop()
	base, _ = startServeUntil(t, env)
	code, body := mcpCallTool(t, base, mcpToken, session, "list_tools", `{}`)
	if code != http.StatusOK || !bytes.Contains(body, []byte(mcpTool+" (request_mcp_credit)")) {
		t.Errorf("list_tools after the restart = %d %s", code, body)
	}
}
