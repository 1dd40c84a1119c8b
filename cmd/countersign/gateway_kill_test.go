package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store/storetest"
)

// envUpstreamProcess makes the test binary an MCP server over stdio with
// one kind of tool, append, that appends its line to the file it names and
// is counted there: the upstream of the gateway's kill tests. While the
// file <file>.hold-before exists, a call waits before it writes until the
// process ends; while <file>.hold-after exists, it writes, then waits. The
// same tool is listed twice, as append and append_again (declared
// idempotent).
const envUpstreamProcess = "COUNTERSIGN_TEST_UPSTREAM_PROCESS"

// runCountingUpstream serves the counting upstream on stdin and stdout.
func runCountingUpstream() int {
	server := mcp.NewServer(&mcp.Implementation{Name: "counting-upstream", Version: "1"}, nil)
	schema := json.RawMessage(`{"type": "object", "required": ["file", "line"], "properties": {"file": {"type": "string"}, "line": {"type": "string"}}}`)
	appendLine := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ File, Line string }
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		if _, err := os.Stat(args.File + ".hold-before"); err == nil {
			<-ctx.Done() // killed with serve: its stdin closes
			return nil, ctx.Err()
		}
		f, err := os.OpenFile(args.File, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		_, err = f.WriteString(args.Line + "\n")
		if err == nil {
			err = f.Sync()
		}
		f.Close()
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(args.File + ".hold-after"); err == nil {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "appended " + args.Line}}}, nil
	}
	server.AddTool(&mcp.Tool{Name: "append", InputSchema: schema}, appendLine)
	server.AddTool(&mcp.Tool{Name: "append_again", InputSchema: schema}, appendLine)
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !strings.Contains(err.Error(), "EOF") {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// killServe is serve on PostgreSQL with the counting upstream, its calls
// bounded to 2 s and its claims to 4 s, so a killed replica's claim expires
// quickly to the reconciler.
type killServe struct {
	*serveProcess
	env  map[string]string
	file string
}

func startKillServe(t *testing.T) *killServe {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tools := fmt.Sprintf(`  unused.tool:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/unused"}
upstreams:
  count:
    command: [%q, "-test.run=^$"]
    env: {%s: "1"}
    idempotent: [append_again]
    approvers: [U1]
    call_timeout: 2s
    claim_timeout: 4s
`, self, envUpstreamProcess)
	env := quorumEnv(t, storetest.NewURL(t), bottest.New(t), tools)
	s := &killServe{env: env, file: filepath.Join(t.TempDir(), "appended")}
	s.start(t)
	return s
}

// start runs serve (again) and waits until its upstream is connected.
func (s *killServe) start(t *testing.T) {
	t.Helper()
	s.serveProcess = startServeProcess(t, s.env)
	waitForUpstreams(t, s.base, "count")
}

// hold makes the upstream's calls wait (before or after they write) until
// release.
func (s *killServe) hold(t *testing.T, where string) (release func()) {
	t.Helper()
	marker := s.file + ".hold-" + where
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return func() { os.Remove(marker) }
}

// kill ends serve with SIGKILL, and its upstream with it.
func (s *killServe) kill(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = s.cmd.Wait()
}

// lines is what the upstream appended.
func (s *killServe) lines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(s.file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// approve posts a call of tool appending line and approves it.
func (s *killServe) approve(t *testing.T, tool, line string, step int) postedRequest {
	t.Helper()
	effect, _ := json.Marshal(map[string]string{"file": s.file, "line": line})
	req := postIntent(t, s.base, fmt.Sprintf(`{"run_id":"r-kill","step":%d,"tool":%q,"effect":%s}`, step, tool, effect))
	if code := clickAt(t, s.base, "U1", "approve", req); code != http.StatusOK {
		t.Fatalf("the click answered %d", code)
	}
	return req
}

// execution is the request's execution state and code.
func (s *killServe) execution(t *testing.T, key string) (state, code string) {
	t.Helper()
	v := getView(t, s.base, key)
	if v.Execution == nil {
		return "", ""
	}
	return v.Execution.State, v.Execution.Code
}

// countersign killed with kill -9 after the approval and before, during
// and after the upstream call: the upstream gets each call at most once; a
// call cut off after it was sent needs review, never resent, unless the
// tool is declared idempotent, when it is sent again, once.
func TestGatewayKilledAroundAnUpstreamCallMakesItAtMostOnce(t *testing.T) {
	t.Parallel()
	s := startKillServe(t)
	count := func(line string) int {
		n := 0
		for _, l := range s.lines(t) {
			if l == line {
				n++
			}
		}
		return n
	}

	// Before: killed at once after the approval; the restarted serve makes
	// the call, or finds it cut off; never twice.
	before := s.approve(t, "count__append", "before", 1)
	s.kill(t)
	s.start(t)
	eventually(t, "the call approved before the kill to end", func() bool {
		state, _ := s.execution(t, before.Key)
		return state == "succeeded" || state == "needs_review"
	})

	// During: the upstream holds the call before it writes; killed, the
	// call was sent and cut off: it needs review, and nothing was written.
	release := s.hold(t, "before")
	during := s.approve(t, "count__append", "during", 2)
	eventually(t, "the held call to be sent", func() bool {
		state, _ := s.execution(t, during.Key)
		return state == "claimed"
	})
	time.Sleep(500 * time.Millisecond) // the call reaches the upstream
	s.kill(t)
	release()
	s.start(t)

	// After: the upstream wrote, then held its answer; killed: it needs
	// review, written once.
	release = s.hold(t, "after")
	after := s.approve(t, "count__append", "after", 3)
	eventually(t, "the upstream to write the held call", func() bool { return count("after") == 1 })
	s.kill(t)
	release()
	s.start(t)

	for _, c := range []struct{ name, key string }{{"during", during.Key}, {"after", after.Key}} {
		eventually(t, "the call cut off "+c.name+" to need review", func() bool {
			state, _ := s.execution(t, c.key)
			return state == "needs_review"
		})
		if _, code := s.execution(t, c.key); code != "unverifiable" {
			t.Errorf("the call cut off %s: code %q, want unverifiable", c.name, code)
		}
	}

	// An idempotent tool's call cut off after it wrote is sent again, once.
	release = s.hold(t, "after")
	again := s.approve(t, "count__append_again", "again", 4)
	eventually(t, "the upstream to write the idempotent call", func() bool { return count("again") == 1 })
	s.kill(t)
	release()
	s.start(t)
	eventually(t, "the idempotent call to be sent again and succeed", func() bool {
		state, _ := s.execution(t, again.Key)
		return state == "succeeded"
	})
	s.kill(t)

	if n := count("before"); n > 1 {
		t.Errorf("the call approved before the kill was made %d times", n)
	}
	if during, after, again := count("during"), count("after"), count("again"); during != 0 || after != 1 || again != 2 {
		t.Errorf("the upstream wrote during %d, after %d, again %d times; want 0, 1 and 2 (the first and one resend)", during, after, again)
	}
}
