package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary is also the tests' own upstream: run with
// GATEWAY_TEST_UPSTREAM=stdio it serves testServer over its standard
// input and output, writing its pid to GATEWAY_TEST_DIR/pid.
func TestMain(m *testing.M) {
	if os.Getenv("GATEWAY_TEST_UPSTREAM") == "stdio" {
		dir := os.Getenv("GATEWAY_TEST_DIR")
		tmp := filepath.Join(dir, "pid.tmp")
		if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "pid")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := testServer(dir).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test upstream:", err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var objectSchema = json.RawMessage(`{"type":"object","properties":{"msg":{"type":"string"}}}`)

// testServer is a small MCP server with the tools the tests need:
//   - echo answers its msg, and the idempotency key of the call's _meta;
//   - fail answers a tool error with a long text;
//   - add_tool adds the tool "added" (tools/list_changed goes out);
//   - block and block_idem append their name to dir/calls and never
//     answer (until the call is cancelled).
func testServer(dir string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "testupstream", Version: "1"}, nil)
	echo := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			Msg string `json:"msg"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		key, _ := req.Params.Meta[MetaIdempotencyKey].(string)
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: args.Msg}},
			StructuredContent: map[string]any{"msg": args.Msg, "key": key},
		}, nil
	}
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, Title: "Echo"}}, echo)
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true,
				Content: []mcp.Content{&mcp.TextContent{Text: "it failed: " + strings.Repeat("é", 400)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "add_tool", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.AddTool(&mcp.Tool{Name: "added", InputSchema: objectSchema}, echo)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added"}}}, nil
		})
	for _, name := range []string{"block", "block_idem"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: objectSchema},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				f, err := os.OpenFile(filepath.Join(dir, "calls"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
				if err != nil {
					return nil, err
				}
				_, _ = f.WriteString(name + "\n")
				_ = f.Close()
				<-ctx.Done()
				return nil, ctx.Err()
			})
	}
	return s
}

// testUpstream is the test binary run as an upstream over stdio, in dir.
func testUpstream(name, dir string) Upstream {
	return Upstream{Name: name, Command: []string{os.Args[0]},
		Env: map[string]string{"GATEWAY_TEST_UPSTREAM": "stdio", "GATEWAY_TEST_DIR": dir}}
}

// logBuffer collects a gateway's log, to be searched and shown on failure.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start starts a gateway to ups, stopped when the test ends, and returns
// it with its log.
func start(t *testing.T, ups ...Upstream) (*Gateway, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	g := New(ups, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		g.Stop()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs)
		}
	})
	return g, logs
}

// eventually polls cond every 20 ms for up to d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func health(g *Gateway, name string) Health {
	for _, h := range g.Health() {
		if h.Name == name {
			return h
		}
	}
	return Health{}
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
