package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/mcpserver"
)

const gatewayTools = `{"tools": [
	{"name": "fs__read_text_file", "upstream": "fs", "tool": "read_text_file", "description": "Reads a file.",
	 "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}, "annotations": {"read_only_hint": true}, "read": true, "up": true},
	{"name": "fs__write_file", "upstream": "fs", "tool": "write_file", "description": "Writes a file.",
	 "input_schema": {"type": "object", "required": ["path", "content"], "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
	 "annotations": {"destructive_hint": true}, "read": false, "up": true, "hold_seconds": 5}]}`

const gatewayToolsAnswer = `{"tools": [{"name": "fs__write_file", "reversible": false, "policy": {"approvals": 1, "approvers": ["U0OPS"]},
	"effect_schema": {"type": "object"}}]}`

// gatedWrite is the request of a gated fs__write_file call, its execution
// as given.
func gatedWrite(settled bool, execution string) string {
	return `{"id": "0c5b3a9e-5d1f-4f0e-8a43-9b2f1d7c6e12", "key": "wa_3c", "key_short": "wa_3c", "status": "approved", "round": 1,
		"run_id": "run-7", "step": 3, "tool": "fs__write_file", "effect": {"path": "/srv/a", "content": "hi"}, "requested_by": "agent",
		"payload_hash": "sha256:00", "created_at": "2026-01-02T03:04:05Z", "expires_at": "2026-01-05T03:04:05Z",
		"decision": {"verdict": "approve", "by": "U0OPS", "at": "2026-01-02T03:04:05Z", "via": "slack", "round": 1},
		"execution": ` + execution + `, "settled": ` + map[bool]string{true: "true", false: "false"}[settled] + `, "version": 4,
		"policy": {"verdict": "ask", "approvals": 1, "approvers": ["U0OPS"], "tier": null, "tier_name": "default", "version": "sha256:ab"}, "votes": []}`
}

// The gateway's upstream tools are served under their own names and input
// schemas, the gated one without a typed request_ tool; a read passes
// through; a gated call is requested with the run and step of its _meta and
// its arguments as the effect, and answers the upstream's own result once
// countersign made the call.
func TestGatewayToolsServeUpstreamCalls(t *testing.T) {
	t.Parallel()
	var posted atomic.Value
	var reads atomic.Int64
	session := connect(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/tools":
			io.WriteString(w, gatewayToolsAnswer)
		case r.URL.Path == "/v1/gateway/tools":
			io.WriteString(w, gatewayTools)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/gateway/call":
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), "/srv/down") {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"error": {"code": "unavailable", "message": "The upstream fs is not connected; countersign keeps trying to reach it.", "request_id": "req_1"}}`)
				return
			}
			reads.Add(1)
			if !strings.Contains(string(body), `"tool":"fs__read_text_file"`) || !strings.Contains(string(body), `"path":"/srv/a"`) {
				http.Error(w, "unexpected call "+string(body), http.StatusTeapot)
				return
			}
			io.WriteString(w, `{"result": {"content": [{"type": "text", "text": "hello"}], "isError": false}}`)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/requests":
			body, _ := io.ReadAll(r.Body)
			posted.Store(string(body))
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, gatedWrite(false, `{"state": "ready", "attempts": 0}`))
		case r.Method == http.MethodGet && r.URL.Path == "/v1/requests/wa_3c":
			io.WriteString(w, gatedWrite(true, `{"state": "succeeded", "attempts": 1,
				"response": {"status": 0, "body": {"content": [{"type": "text", "text": "Successfully wrote to /srv/a"}], "isError": false}}}`))
		default:
			http.Error(w, "not expected", http.StatusTeapot)
		}
	}))
	tools, err := session.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tool := range tools.Tools {
		byName[tool.Name] = tool
	}
	read, write := byName["fs__read_text_file"], byName["fs__write_file"]
	if read == nil || write == nil || byName["request_fs__write_file"] != nil || !read.Annotations.ReadOnlyHint ||
		!strings.Contains(write.Description, "reviewed first") {
		t.Fatalf("tools: %v", byName)
	}
	schema, _ := json.Marshal(write.InputSchema)
	if !strings.Contains(string(schema), `"required":["path","content"]`) {
		t.Errorf("write_file's input schema = %s", schema)
	}

	res, text := callText(t, session, "fs__read_text_file", map[string]any{"path": "/srv/a"})
	if res.IsError || text != "hello" || reads.Load() != 1 {
		t.Errorf("the read: isError %v, %q, %d calls", res.IsError, text, reads.Load())
	}
	res, text = callText(t, session, "fs__read_text_file", map[string]any{"path": "/srv/down"})
	if !res.IsError || !strings.Contains(text, "fs__read_text_file is not available now: The upstream fs is not connected") {
		t.Errorf("a read while its upstream is down: isError %v, %q", res.IsError, text)
	}

	res, err = session.CallTool(t.Context(), &mcp.CallToolParams{Name: "fs__write_file",
		Arguments: map[string]any{"path": "/srv/a", "content": "hi"}, Meta: mcp.Meta{"countersign/run_id": "run-7", "countersign/step": 3}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.Content[0].(*mcp.TextContent).Text != "Successfully wrote to /srv/a" {
		t.Errorf("the gated call: isError %v, %+v", res.IsError, res.Content[0])
	}
	var intent map[string]any
	if body, _ := posted.Load().(string); json.Unmarshal([]byte(body), &intent) != nil || intent["tool"] != "fs__write_file" ||
		intent["run_id"] != "run-7" || intent["step"] != float64(3) || intent["effect"].(map[string]any)["content"] != "hi" {
		t.Errorf("the intent posted = %v", posted.Load())
	}
}

// A server that follows the gateway adds the tools an upstream comes to
// list and removes those it no longer does, and tells its client.
func TestFollowingTheGatewayTellsTheClient(t *testing.T) {
	t.Parallel()
	var listing atomic.Value
	listing.Store(gatewayTools)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/tools":
			io.WriteString(w, gatewayToolsAnswer)
		case "/v1/gateway/tools":
			io.WriteString(w, listing.Load().(string))
		default:
			http.Error(w, "not expected", http.StatusTeapot)
		}
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	server, err := mcpserver.New(ctx, mcpserver.Config{Client: client.New(srv.URL, "token"), CallTimeout: 2 * time.Second,
		Version: "test", FollowGateway: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	serverSide, clientSide := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, serverSide, nil); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 16)
	session, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, clientSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	// read_text_file goes, list_directory comes.
	listing.Store(strings.Replace(gatewayTools, `"fs__read_text_file", "upstream": "fs", "tool": "read_text_file"`,
		`"fs__list_directory", "upstream": "fs", "tool": "list_directory"`, 1))
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the client heard of no change")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		tools, err := session.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range tools.Tools {
			names = append(names, tool.Name)
		}
		got := strings.Join(names, " ")
		if strings.Contains(got, "fs__list_directory") && !strings.Contains(got, "fs__read_text_file") && strings.Contains(got, "fs__write_file") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools after the change: %s", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
