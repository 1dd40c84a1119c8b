package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store/storetest"
)

// gatewayServe is serve on PostgreSQL with two real MCP servers from npm
// as upstreams: the filesystem server on dir and the memory server. Their
// gated calls go to a fake Slack, whose clicks decide them.
type gatewayServe struct {
	*serveProcess
	dir string
}

// upstreamServer is the path of an MCP server installed by scripts/test-deps
// in tools/mcpupstreams.
func upstreamServer(t testing.TB, pkg string) string {
	t.Helper()
	path, _ := filepath.Abs(filepath.Join("../../tools/mcpupstreams/node_modules/@modelcontextprotocol", pkg, "dist/index.js"))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the MCP server %s is not installed (scripts/test-deps runs npm ci in tools/mcpupstreams): %v", pkg, err)
	}
	return path
}

func startGatewayServe(t *testing.T) *gatewayServe {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the gateway's upstreams need Node.js (scripts/test-deps installs it): %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the upstream"), 0o600); err != nil {
		t.Fatal(err)
	}
	memory := filepath.Join(t.TempDir(), "memory.jsonl")
	tools := fmt.Sprintf(`  unused.tool:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/unused"}
upstreams:
  fs:
    command: [%q, %q, %q]
    reads: [read_text_file, list_directory]
    approvers: [U1]
    reject_reason: "off"
    hold: 60s
  memory:
    command: [%q, %q]
    env: {MEMORY_FILE_PATH: %q}
    reads: [read_graph, search_nodes, open_nodes]
    approvers: [U1]
    reject_reason: "off"
    hold: 60s
`, node, upstreamServer(t, "server-filesystem"), dir, node, upstreamServer(t, "server-memory"), memory)
	env := quorumEnv(t, storetest.NewURL(t), bottest.New(t), tools)
	g := &gatewayServe{serveProcess: startServeProcess(t, env), dir: dir}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve:\n%s", g.logs.String())
		}
	})
	return g
}

// decide clicks verdict on the pending request of tool, once it is there.
func (g *gatewayServe) decide(t *testing.T, tool, verdict string) {
	t.Helper()
	var pending postedRequest
	eventually(t, "a pending request of "+tool, func() bool {
		code, body := caller(t, http.DefaultClient, g.base)(http.MethodGet, "/v1/requests?status=pending&tool="+tool, "",
			map[string]string{"Authorization": "Bearer " + smokeToken})
		var page struct {
			Requests []postedRequest `json:"data"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &page) != nil || len(page.Requests) == 0 {
			return false
		}
		pending = page.Requests[0]
		return true
	})
	if code := clickAt(t, g.base, "U1", verdict, pending); code != http.StatusOK {
		t.Fatalf("the %s click answered %d", verdict, code)
	}
}

type gatewayCall struct {
	IsError  bool   `json:"isError"`
	Text     string `json:"text"`
	Progress int    `json:"progress"`
}

type gatewayReport struct {
	Tools                             []string
	WriteFileSchema                   map[string]any
	Read, Write, WriteAgain, Rejected gatewayCall
	Entities, Graph                   gatewayCall
}

// runGatewayClient runs tools/mcpclient/gateway.mjs with env, deciding each
// gated call when it asks, and returns its report.
func runGatewayClient(t *testing.T, g *gatewayServe, env map[string]string) gatewayReport {
	t.Helper()
	env["DIR"] = g.dir
	var report gatewayReport
	runMCPScript(t, "gateway.mjs", env, g.logs.String, func(line []byte) bool {
		var event struct{ Event, Tool, Verdict string }
		if json.Unmarshal(line, &event) != nil {
			return false
		}
		switch event.Event {
		case "decide":
			g.decide(t, event.Tool, event.Verdict)
			return true
		case "report":
			if err := json.Unmarshal(line, &report); err != nil {
				t.Fatalf("decoding the report: %v\n%s", err, line)
			}
		}
		return false
	})
	return report
}

// checkGatewayReport holds what both transports must show: the upstreams'
// tools beside countersign's own; a read through with no request; a
// write_file made once, after its approval, with the approved content, and
// the same call again the same write; a rejected one never made; the
// memory server's create_entities the same.
func checkGatewayReport(t *testing.T, g *gatewayServe, r gatewayReport, transport string) {
	t.Helper()
	for _, want := range []string{"fs__read_text_file", "fs__write_file", "memory__create_entities", "memory__read_graph", "wait_for_outcome"} {
		if !slices.Contains(r.Tools, want) {
			t.Errorf("no %s among the tools %v", want, r.Tools)
		}
	}
	if slices.Contains(r.Tools, "request_fs__write_file") {
		t.Error("a gated upstream tool also got a typed request_ tool")
	}
	if required, _ := r.WriteFileSchema["required"].([]any); !slices.Contains(required, any("content")) {
		t.Errorf("fs__write_file's input schema = %v, want the upstream's", r.WriteFileSchema)
	}
	if r.Read.IsError || r.Read.Text != "hello from the upstream" {
		t.Errorf("the read = %+v", r.Read)
	}
	content := "approved through countersign (" + transport + ")"
	if r.Write.IsError || !strings.Contains(r.Write.Text, "Successfully wrote") {
		t.Errorf("the approved write = %+v", r.Write)
	}
	if got, err := os.ReadFile(filepath.Join(g.dir, "approved.txt")); err != nil || string(got) != content {
		t.Errorf("approved.txt = %q, %v; want %q", got, err, content)
	}
	if r.WriteAgain.IsError || r.WriteAgain.Text != r.Write.Text {
		t.Errorf("the same call again = %+v, want the first's answer", r.WriteAgain)
	}
	if !r.Rejected.IsError || !strings.Contains(r.Rejected.Text, "rejected") {
		t.Errorf("the rejected write = %+v", r.Rejected)
	}
	if _, err := os.Stat(filepath.Join(g.dir, "rejected.txt")); !os.IsNotExist(err) {
		t.Errorf("the rejected write's file exists: %v", err)
	}
	if r.Entities.IsError || !strings.Contains(r.Graph.Text, "ticket-"+transport) {
		t.Errorf("create_entities = %+v, then the graph = %+v", r.Entities, r.Graph)
	}
	// Each approved call was made once: one execution, one attempt.
	code, body := caller(t, http.DefaultClient, g.base)(http.MethodGet, "/v1/requests?tool=fs__write_file&limit=100", "",
		map[string]string{"Authorization": "Bearer " + smokeToken})
	var page struct {
		Requests []struct {
			Status    string
			Execution *struct {
				State    string
				Attempts int
			}
		} `json:"data"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &page) != nil {
		t.Fatalf("listing = %d %s", code, body)
	}
	for _, req := range page.Requests {
		if req.Status == "approved" && (req.Execution == nil || req.Execution.State != "succeeded" || req.Execution.Attempts != 1) {
			t.Errorf("an approved write_file's execution = %+v, want one attempt that succeeded", req.Execution)
		}
	}
}

// Behind countersign, driven by the TypeScript MCP SDK's client through
// /mcp: the real filesystem and memory servers' reads pass through, and
// their writes wait for a click and are made once.
func TestGatewayOverHTTPGatesRealMCPServers(t *testing.T) {
	t.Parallel()
	g := startGatewayServe(t)
	waitForUpstreams(t, g.base, "fs", "memory")
	r := runGatewayClient(t, g, map[string]string{"MCP_TRANSPORT": "http", "MCP_URL": g.base + "/mcp", "MCP_TOKEN": smokeToken})
	checkGatewayReport(t, g, r, "http")
	// Each call is logged once, as countersign's; the SDK's lines for the
	// session a stateless server opens per POST are not.
	logs := g.logs.String()
	if !strings.Contains(logs, "read passed through") {
		t.Error("serve logged no read passed through")
	}
	for _, line := range []string{"server session connected", "server session disconnected", "server connecting"} {
		if strings.Contains(logs, line) {
			t.Errorf("serve logged the MCP SDK's %q for a session of one call", line)
		}
	}
}

// The same through countersign mcp over stdio, which reaches the upstreams
// through serve's agent API.
func TestGatewayOverStdioGatesRealMCPServers(t *testing.T) {
	t.Parallel()
	g := startGatewayServe(t)
	waitForUpstreams(t, g.base, "fs", "memory")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	serverEnv, _ := json.Marshal(map[string]string{envMCPProcess: "1", "COUNTERSIGN_URL": g.base, "COUNTERSIGN_TOKEN": smokeToken,
		"COUNTERSIGN_LOG_FORMAT": "json", "PATH": os.Getenv("PATH")})
	r := runGatewayClient(t, g, map[string]string{"MCP_TRANSPORT": "stdio", "MCP_COMMAND": self, "MCP_ARGS": `["-test.run=^$"]`, "MCP_ENV": string(serverEnv)})
	checkGatewayReport(t, g, r, "stdio")
}

// waitForUpstreams waits until serve at base says in /readyz that each of
// the upstreams is up.
func waitForUpstreams(t testing.TB, base string, names ...string) {
	t.Helper()
	eventually(t, "the upstreams to connect", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for _, name := range names {
			if !strings.Contains(string(body), "upstream "+name+": up") {
				return false
			}
		}
		return true
	})
}
