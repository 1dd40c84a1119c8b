package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/executor/sender"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestToolListChanged(t *testing.T) {
	t.Parallel()
	up := testUpstream("t", t.TempDir())
	up.Trusted = true
	g, logs := start(t, up)
	changed := make(chan struct{}, 10)
	g.OnChange(func() { changed <- struct{}{} })

	echo, ok := g.Tool("t__echo")
	if !ok {
		t.Fatalf("no t__echo in %+v", g.Tools())
	}
	if !strings.Contains(logs.String(), "protocol=2026-07-28") {
		t.Errorf("the stdio upstream did not negotiate 2026-07-28:\n%s", logs)
	}
	// A trusted upstream's hints are believed.
	if !echo.Read || !echo.Idempotent || echo.Title != "Echo" {
		t.Errorf("t__echo from a trusted upstream = %+v, want read and idempotent", echo)
	}
	if _, ok := g.Tool("t__added"); ok {
		t.Fatal("t__added before add_tool")
	}
	if _, err := g.Call(context.Background(), "t__add_tool", nil); err != nil {
		t.Fatalf("add_tool: %v", err)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("OnChange was not called after tools/list_changed")
	}
	eventually(t, 5*time.Second, "t__added listed", func() bool { _, ok := g.Tool("t__added"); return ok })
	if h := health(g, "t"); h.Tools != len(g.Tools()) {
		t.Errorf("health says %d tools, Tools has %d", h.Tools, len(g.Tools()))
	}
	res, err := g.Call(context.Background(), "t__added", json.RawMessage(`{"msg":"hi"}`))
	if err != nil || textOf(res) != "hi" {
		t.Errorf("t__added = %v, %v", res, err)
	}
}

func TestUntrustedHintsAndToolErrors(t *testing.T) {
	t.Parallel()
	g, _ := start(t, testUpstream("t", t.TempDir()))
	echo, ok := g.Tool("t__echo")
	if !ok {
		t.Fatal("no t__echo")
	}
	if echo.Read || echo.Idempotent || echo.Annotations.ReadOnly == nil || !*echo.Annotations.ReadOnly {
		t.Errorf("t__echo from an untrusted upstream = %+v, want hints kept but not believed", echo)
	}

	s := g.Sender()
	a := s.Send(context.Background(), sender.Write{Tool: "t__echo", Key: "idem-key-7", Body: []byte(`{"msg":"once"}`)})
	if a.Outcome != sender.OutcomeSucceeded {
		t.Fatalf("echo attempt %+v", a)
	}
	var body struct {
		StructuredContent struct{ Msg, Key string } `json:"structuredContent"`
		IsError           bool                      `json:"isError"`
	}
	if err := json.Unmarshal(a.Body, &body); err != nil || body.StructuredContent.Msg != "once" ||
		body.StructuredContent.Key != "idem-key-7" {
		t.Errorf("recorded body %s: want msg once and the idempotency key from _meta", a.Body)
	}

	a = s.Send(context.Background(), sender.Write{Tool: "t__fail", Key: "k", Body: []byte(`{}`)})
	if a.Outcome != sender.OutcomeFatal || a.Code != CodeToolError || !strings.HasPrefix(a.Message, "it failed: é") ||
		len(a.Message) > maxMessage || !strings.Contains(string(a.Body), `"isError":true`) {
		t.Errorf("fail attempt = %+v (message %d bytes), want fatal tool_error cut to %d bytes", a, len(a.Message), maxMessage)
	}
	a = s.Send(context.Background(), sender.Write{Tool: "t__nope", Key: "k", Body: []byte(`{}`)})
	if a.Outcome != sender.OutcomeFatal || a.Code != CodeRPCError || a.Message == "" {
		t.Errorf("unknown tool attempt = %+v, want fatal rpc_error", a)
	}
	a = s.Send(context.Background(), sender.Write{Tool: "other__echo", Key: "k", Body: []byte(`{}`)})
	if a.Outcome != sender.OutcomeFatal || a.Code != CodeUnknownUpstream {
		t.Errorf("unknown upstream attempt = %+v", a)
	}
	for code, want := range map[string]sender.Outcome{
		CodeToolError: sender.OutcomeFatal, CodeRPCError: sender.OutcomeFatal,
		CodeUpstreamDown: sender.OutcomeRetry, CodeConnectionLost: sender.OutcomeReview,
		CodeCallTimeout: sender.OutcomeReview, CodeInvalidArguments: sender.OutcomeFatal,
	} {
		if got, known := s.Outcome(code); !known || got != want {
			t.Errorf("Outcome(%s) = %s, %v; want %s", code, got, known, want)
		}
	}
	if _, known := s.Outcome("http_500"); known {
		t.Error("Outcome(http_500) known")
	}
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	up := testUpstream("t", t.TempDir())
	up.CallTimeout = 300 * time.Millisecond
	up.Idempotent = []string{"block_idem"}
	g, _ := start(t, up)
	s := g.Sender()
	a := s.Send(context.Background(), sender.Write{Tool: "t__block", Key: "k", Body: []byte(`{}`)})
	if a.Outcome != sender.OutcomeReview || a.Code != CodeCallTimeout {
		t.Errorf("blocked call = %+v, want review call_timeout", a)
	}
	a = s.Send(context.Background(), sender.Write{Tool: "t__block_idem", Key: "k", Body: []byte(`{}`)})
	if a.Outcome != sender.OutcomeRetry || a.Code != CodeConnectionLost {
		t.Errorf("blocked idempotent call = %+v, want retry connection_lost", a)
	}
	// A timeout leaves the session up.
	if h := health(g, "t"); !h.Up {
		t.Errorf("health after timeouts = %+v, want up", h)
	}
}

// readPID waits for the test upstream in dir to have written a pid other
// than not.
func readPID(t *testing.T, dir string, not int) int {
	t.Helper()
	var pid int
	eventually(t, 10*time.Second, "the upstream's pid", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		if err != nil {
			return false
		}
		pid, _ = strconv.Atoi(string(b))
		return pid != 0 && pid != not
	})
	return pid
}

func calls(dir string) int {
	b, _ := os.ReadFile(filepath.Join(dir, "calls"))
	return strings.Count(string(b), "\n")
}

func TestConnectionLost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	up := testUpstream("t", dir)
	up.Idempotent = []string{"block_idem"}
	g, _ := start(t, up)
	changed := make(chan struct{}, 100)
	g.OnChange(func() { changed <- struct{}{} })
	s := g.Sender()

	pid := 0
	for i, c := range []struct {
		tool    string
		outcome sender.Outcome
	}{
		{"t__block", sender.OutcomeReview},
		{"t__block_idem", sender.OutcomeRetry},
	} {
		pid = readPID(t, dir, pid)
		eventually(t, 10*time.Second, "the upstream up", func() bool { return health(g, "t").Up })
		done := make(chan sender.Attempt, 1)
		go func() {
			done <- s.Send(context.Background(), sender.Write{Tool: c.tool, Key: "k", Body: []byte(`{}`)})
		}()
		eventually(t, 10*time.Second, "the call at the upstream", func() bool { return calls(dir) == i+1 })
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		select {
		case a := <-done:
			if a.Outcome != c.outcome || a.Code != CodeConnectionLost {
				t.Errorf("%s when the upstream died = %+v, want %s connection_lost", c.tool, a, c.outcome)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no answer after the upstream died", c.tool)
		}
		// The command is started again and its tools come back.
		readPID(t, dir, pid)
		eventually(t, 10*time.Second, "the upstream up again", func() bool {
			h := health(g, "t")
			_, ok := g.Tool("t__echo")
			return h.Up && h.LastError == "" && ok
		})
	}
	// Down and up again, twice: each told.
	if n := len(changed); n < 2 {
		t.Errorf("OnChange called %d times, want at least 2", n)
	}
	if calls(dir) != 2 {
		t.Errorf("%d calls reached the upstream, want 2 (never resent by the sender)", calls(dir))
	}
}

func TestUnreachableUpstream(t *testing.T) {
	t.Parallel()
	g, _ := start(t,
		Upstream{Name: "gone", Command: []string{filepath.Join(t.TempDir(), "no-such-program")}, Idempotent: []string{"x"}},
		Upstream{Name: "bad__name", URL: "http://127.0.0.1:1/mcp"})
	hs := g.Health()
	if len(hs) != 2 || hs[0].Up || hs[0].LastError == "" || hs[1].Up || !strings.Contains(hs[1].LastError, "__") {
		t.Fatalf("health = %+v, want both down with a reason", hs)
	}
	if len(g.Tools()) != 0 {
		t.Errorf("tools of down upstreams: %+v", g.Tools())
	}
	var down *DownError
	if _, err := g.Call(context.Background(), "gone__x", nil); !errors.As(err, &down) || down.Upstream != "gone" {
		t.Errorf("Call to a down upstream: %v, want *DownError", err)
	}
	a := g.Sender().Send(context.Background(), sender.Write{Tool: "gone__x", Key: "k", Body: []byte(`{}`)})
	if a.Outcome != sender.OutcomeRetry || a.Code != CodeUpstreamDown {
		t.Errorf("send to a down upstream = %+v, want retry upstream_down", a)
	}
}

func TestHTTPUpstream(t *testing.T) {
	t.Parallel()
	const secret = "Bearer s3cret-token-value"
	const wrong = "Bearer wrong-token-value"
	srv := testServer(t.TempDir())
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	seen := make(chan string, 100)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		select {
		case seen <- got:
		default:
		}
		if got != secret {
			// A careless server echoes what it was sent.
			http.Error(w, "unauthorized: "+got, http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	g, logs := start(t,
		Upstream{Name: "good", URL: ts.URL, Headers: map[string]string{"Authorization": secret}, Reads: []string{"echo"}},
		Upstream{Name: "bad", URL: ts.URL, Headers: map[string]string{"Authorization": wrong}})
	if h := health(g, "good"); !h.Up || h.Tools == 0 {
		t.Fatalf("good = %+v, want up", h)
	}
	if !strings.Contains(logs.String(), "protocol=2025-11-25") {
		t.Errorf("the HTTP upstream did not negotiate 2025-11-25:\n%s", logs)
	}
	res, err := g.Call(context.Background(), "good__echo", json.RawMessage(`{"msg":"over http"}`))
	if err != nil || textOf(res) != "over http" {
		t.Fatalf("good__echo = %v, %v", res, err)
	}
	a := g.Sender().Send(context.Background(), sender.Write{Tool: "good__echo", Key: "http-key", Body: []byte(`{"msg":"w"}`)})
	if a.Outcome != sender.OutcomeSucceeded || !strings.Contains(string(a.Body), "http-key") {
		t.Errorf("send over http = %+v", a)
	}
	// tools/list_changed over the 2025-11-25 revision's standalone stream.
	if _, err := g.Call(context.Background(), "good__add_tool", nil); err != nil {
		t.Fatalf("add_tool: %v", err)
	}
	eventually(t, 5*time.Second, "good__added listed", func() bool { _, ok := g.Tool("good__added"); return ok })

	h := health(g, "bad")
	if h.Up || h.LastError == "" {
		t.Fatalf("bad = %+v, want down with a reason", h)
	}
	for _, text := range []string{h.LastError, logs.String()} {
		for _, cred := range []string{"wrong-token-value", "s3cret-token-value"} {
			if strings.Contains(text, cred) {
				t.Errorf("a credential in %q", text)
			}
		}
	}
	// The header did reach the server: the check above is not vacuous.
	found := false
	for len(seen) > 0 {
		if <-seen == wrong {
			found = true
		}
	}
	if !found {
		t.Error("the bad upstream's header never reached the server")
	}
	if _, ok := g.Tool("bad__echo"); ok {
		t.Error("bad__echo listed")
	}
}

func TestHTTPConnectionLost(t *testing.T) {
	t.Parallel()
	srv := testServer(t.TempDir())
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var hangups atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"name":"block`)) {
			// The call arrived; the connection drops before any answer.
			hangups.Add(1)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	ts.Config.SetKeepAlivesEnabled(false)
	t.Cleanup(ts.Close)
	g, _ := start(t, Upstream{Name: "h", URL: ts.URL, Idempotent: []string{"block_idem"}})
	s := g.Sender()
	for i, c := range []struct {
		tool    string
		outcome sender.Outcome
	}{
		{"h__block", sender.OutcomeReview},
		{"h__block_idem", sender.OutcomeRetry},
	} {
		eventually(t, 10*time.Second, "the upstream up", func() bool { _, ok := g.Tool("h__echo"); return ok })
		a := s.Send(context.Background(), sender.Write{Tool: c.tool, Key: "k", Body: []byte(`{}`)})
		if a.Outcome != c.outcome || a.Code != CodeConnectionLost {
			t.Errorf("%s when the connection dropped = %+v, want %s connection_lost", c.tool, a, c.outcome)
		}
		if n := hangups.Load(); n != int32(i+1) {
			t.Errorf("the upstream saw %d calls, want %d (never resent by the sender)", n, i+1)
		}
	}
	eventually(t, 10*time.Second, "the upstream up again", func() bool { return health(g, "h").Up })
	res, err := g.Call(context.Background(), "h__echo", json.RawMessage(`{"msg":"back"}`))
	if err != nil || textOf(res) != "back" {
		t.Errorf("echo after reconnecting = %v, %v", res, err)
	}

	// The server gone: nothing can be written (no connection is kept
	// between requests, so the call must dial), the send is retried later.
	_ = ts.Listener.Close()
	a := s.Send(context.Background(), sender.Write{Tool: "h__echo", Key: "k", Body: []byte(`{"msg":"x"}`)})
	if a.Outcome != sender.OutcomeRetry || a.Code != CodeUpstreamDown {
		t.Errorf("send to a closed server = %+v, want retry upstream_down", a)
	}
	eventually(t, 10*time.Second, "the upstream down", func() bool { h := health(g, "h"); return !h.Up && h.LastError != "" })
}

func TestScrub(t *testing.T) {
	u := &upstream{cfg: Upstream{
		URL:     "https://user:pa55word-long@example.test/mcp",
		Headers: map[string]string{"Authorization": "Bearer tok-123456", "X-Key": "k-987"},
		Env:     map[string]string{"API_TOKEN": "env-secret-1", "SHORT": "ab"},
	}}
	got := u.scrub("401 from https://user:pa55word-long@example.test/mcp: tok-123456 / Bearer tok-123456 / k-987 / env-secret-1 / pa55word-long / ab")
	for _, secret := range []string{"pa55word-long", "tok-123456", "k-987", "env-secret-1"} {
		if strings.Contains(got, secret) {
			t.Errorf("scrub left %q in %q", secret, got)
		}
	}
	if !strings.HasPrefix(got, "401 from ") || !strings.HasSuffix(got, "/ ab") {
		t.Errorf("scrub took more than the secrets: %q", got)
	}
}

func TestLongNamesAndStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	name := strings.Repeat("u", 54)
	g, logs := start(t, testUpstream(name, dir))
	pid := readPID(t, dir, 0)
	// 54 + 2 + 8 = 64 characters: kept; block_idem would make 66.
	if _, ok := g.Tool(name + "__add_tool"); !ok {
		t.Errorf("%s__add_tool (64 characters) left out", name)
	}
	if _, ok := g.Tool(name + "__block_idem"); ok {
		t.Errorf("%s__block_idem (66 characters) listed", name)
	}
	if !strings.Contains(logs.String(), "upstream tool left out") {
		t.Errorf("leaving block_idem out was not logged:\n%s", logs)
	}
	var changes atomic.Int32
	g.OnChange(func() { changes.Add(1) })

	g.Stop()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the command after Stop: kill -0 = %v, want no such process", err)
	}
	if h := health(g, name); h.Up || len(g.Tools()) != 0 {
		t.Errorf("after Stop: health %+v, %d tools", h, len(g.Tools()))
	}
	time.Sleep(50 * time.Millisecond)
	if n := changes.Load(); n != 0 {
		t.Errorf("OnChange called %d times for Stop", n)
	}
	if err := g.Start(context.Background()); err == nil {
		t.Error("Start after Stop succeeded")
	}
	if err := ValidName(name + "x"); err != nil {
		t.Errorf("ValidName(55 characters) = %v", err)
	}
	for _, bad := range []string{"", "Fs", "a__b", "a.b", strings.Repeat("u", 62)} {
		if ValidName(bad) == nil {
			t.Errorf("ValidName(%q) = nil", bad)
		}
	}
}
