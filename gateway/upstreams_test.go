package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/executor/sender"
)

// nodeServer is the command that runs the npm package pkg of
// tools/mcpupstreams (installed by scripts/test-deps, never fetched here).
func nodeServer(t *testing.T, pkg string, args ...string) []string {
	t.Helper()
	node, err := execLookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: run scripts/test-deps")
	}
	entry, err := filepath.Abs(filepath.Join("..", "tools", "mcpupstreams", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("%s is not installed (%v): run scripts/test-deps, which runs npm ci in tools/mcpupstreams", pkg, err)
	}
	return append([]string{node, entry}, args...)
}

// realDir is a new directory by the path the filesystem server resolves
// it to.
func realDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFilesystemServer(t *testing.T) {
	t.Parallel()
	dir := realDir(t)
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	g, _ := start(t, Upstream{Name: "fs", Command: nodeServer(t, "server-filesystem", dir),
		Reads: []string{"read_text_file", "list_directory"}})
	if h := health(g, "fs"); !h.Up || h.Tools == 0 || h.LastError != "" {
		t.Fatalf("health = %+v, want up with tools", h)
	}

	tools := g.Tools()
	byName := map[string]Tool{}
	for i, tool := range tools {
		if i > 0 && tools[i-1].Exposed >= tool.Exposed {
			t.Errorf("Tools not sorted: %s before %s", tools[i-1].Exposed, tool.Exposed)
		}
		if tool.Upstream != "fs" || tool.Exposed != "fs__"+tool.Name {
			t.Errorf("tool %+v: want upstream fs, exposed fs__<name>", tool)
		}
		byName[tool.Exposed] = tool
	}
	read, ok := byName["fs__read_text_file"]
	if !ok {
		t.Fatalf("no fs__read_text_file in %d tools", len(tools))
	}
	write, ok := byName["fs__write_file"]
	if !ok {
		t.Fatal("no fs__write_file")
	}
	if !read.Read || write.Read {
		t.Errorf("Read: read_text_file %v, write_file %v; want true, false (listed in Reads)", read.Read, write.Read)
	}
	// write_file says idempotentHint true, but the upstream is not trusted.
	if write.Idempotent || write.Annotations.Idempotent == nil || !*write.Annotations.Idempotent {
		t.Errorf("write_file: Idempotent %v, annotation %v; want false, declared true", write.Idempotent, write.Annotations.Idempotent)
	}
	if write.Annotations.Destructive == nil || !*write.Annotations.Destructive || write.Title != "Write File" {
		t.Errorf("write_file annotations %+v, title %q", write.Annotations, write.Title)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(write.InputSchema, &schema); err != nil || schema.Type != "object" ||
		schema.Properties["path"] == nil || schema.Properties["content"] == nil {
		t.Errorf("write_file input schema %s: want an object with path and content", write.InputSchema)
	}
	if len(write.OutputSchema) == 0 {
		t.Error("write_file has no output schema")
	}
	if got, ok := g.Tool("fs__write_file"); !ok || got.Name != "write_file" {
		t.Errorf("Tool(fs__write_file) = %+v, %v", got, ok)
	}

	// A read passes through.
	args, _ := json.Marshal(map[string]string{"path": filepath.Join(dir, "hello.txt")})
	res, err := g.Call(context.Background(), "fs__read_text_file", args)
	if err != nil {
		t.Fatalf("Call read_text_file: %v", err)
	}
	if res.IsError || !strings.Contains(textOf(res), "hello from disk") {
		t.Errorf("read_text_file = %q (isError %v)", textOf(res), res.IsError)
	}
	if _, err := g.Call(context.Background(), "fs__no_such_tool", args); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("Call of an unknown tool: %v, want ErrUnknownTool", err)
	}

	// The sender writes the file once, with exactly the given content.
	content := "line one\nline two — ünïcode\n"
	target := filepath.Join(dir, "out.txt")
	body, _ := json.Marshal(map[string]string{"path": target, "content": content})
	s := g.Sender()
	a := s.Send(context.Background(), sender.Write{Tool: "fs__write_file", Key: "key-1", RequestID: "req-1", Body: body})
	if a.Outcome != sender.OutcomeSucceeded || a.Code != "" || a.Status != 0 {
		t.Fatalf("write_file attempt = %+v, want succeeded", a)
	}
	var recorded struct {
		Content []struct {
			Type, Text string
		} `json:"content"`
		IsError *bool `json:"isError"`
	}
	if err := json.Unmarshal(a.Body, &recorded); err != nil || recorded.IsError == nil || *recorded.IsError ||
		len(recorded.Content) == 0 || !strings.Contains(recorded.Content[0].Text, "Successfully wrote") {
		t.Errorf("recorded body %s: want the result, isError false", a.Body)
	}
	got, err := os.ReadFile(target)
	if err != nil || string(got) != content {
		t.Fatalf("out.txt = %q, %v; want %q", got, err, content)
	}

	// Bad arguments: refused, nothing written.
	bad := filepath.Join(dir, "bad.txt")
	body, _ = json.Marshal(map[string]any{"path": bad, "contents": 42})
	a = s.Send(context.Background(), sender.Write{Tool: "fs__write_file", Key: "key-2", Body: body})
	if a.Outcome != sender.OutcomeFatal || (a.Code != CodeRPCError && a.Code != CodeToolError) || a.Message == "" {
		t.Errorf("write_file with bad arguments = %+v, want fatal rpc_error or tool_error with a message", a)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("bad.txt: %v, want not written", err)
	}
	// A path outside the allowed directory: the tool refuses it.
	outside := filepath.Join(realDir(t), "outside.txt")
	body, _ = json.Marshal(map[string]string{"path": outside, "content": "x"})
	a = s.Send(context.Background(), sender.Write{Tool: "fs__write_file", Key: "key-3", Body: body})
	if a.Outcome != sender.OutcomeFatal || (a.Code != CodeRPCError && a.Code != CodeToolError) {
		t.Errorf("write_file outside the allowed directory = %+v, want fatal", a)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("outside.txt: %v, want not written", err)
	}
	// Not a JSON object: nothing sent.
	a = s.Send(context.Background(), sender.Write{Tool: "fs__write_file", Key: "key-4", Body: []byte(`["x"]`)})
	if a.Outcome != sender.OutcomeFatal || a.Code != CodeInvalidArguments {
		t.Errorf("write_file with an array = %+v, want fatal invalid_arguments", a)
	}
	if got, _ := os.ReadFile(target); string(got) != content {
		t.Errorf("out.txt changed to %q", got)
	}
}

func TestMemoryServer(t *testing.T) {
	t.Parallel()
	dir := realDir(t)
	store := filepath.Join(dir, "memory.jsonl")
	g, _ := start(t, Upstream{Name: "memory", Command: nodeServer(t, "server-memory"),
		Env: map[string]string{"MEMORY_FILE_PATH": store}, Reads: []string{"open_nodes", "read_graph"}})
	if _, ok := g.Tool("memory__create_entities"); !ok {
		t.Fatalf("no memory__create_entities in %+v", g.Tools())
	}
	body := []byte(`{"entities":[{"name":"Alice","entityType":"person","observations":["approves the payroll run"]}]}`)
	a := g.Sender().Send(context.Background(), sender.Write{Tool: "memory__create_entities", Key: "key-1", Body: body})
	if a.Outcome != sender.OutcomeSucceeded {
		t.Fatalf("create_entities attempt = %+v, want succeeded", a)
	}
	if !strings.Contains(string(a.Body), "Alice") {
		t.Errorf("recorded body %s: want the created entity", a.Body)
	}
	res, err := g.Call(context.Background(), "memory__open_nodes", json.RawMessage(`{"names":["Alice"]}`))
	if err != nil {
		t.Fatalf("open_nodes: %v", err)
	}
	if res.IsError || !strings.Contains(textOf(res), "approves the payroll run") {
		t.Errorf("open_nodes = %q (isError %v), want Alice's observation", textOf(res), res.IsError)
	}
	disk, err := os.ReadFile(store)
	if err != nil || strings.Count(string(disk), `"name":"Alice"`) != 1 {
		t.Errorf("memory file = %q, %v; want Alice once", disk, err)
	}
}
