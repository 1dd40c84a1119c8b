package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	connectTimeout = 15 * time.Second // one connection's handshake and first listing
	minBackoff     = 250 * time.Millisecond
	maxBackoff     = 30 * time.Second
	steadyAfter    = 5 * time.Second // a session this old resets the backoff when it ends
	terminateGrace = 2 * time.Second // each of: stdin closed, SIGTERM, before SIGKILL
)

// The protocol's rule for a tool's name (2025-11-25): what an exposed
// name may be made of.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// upstream is one upstream's connection loop and what it last listed.
type upstream struct {
	g       *Gateway
	cfg     Upstream
	logger  *slog.Logger
	invalid string // why it is never connected; "" when it is valid

	firstTry chan struct{} // closed after the first connection attempt
	relist   chan struct{} // tools/list_changed arrived

	mu        sync.Mutex
	session   *mcp.ClientSession // nil while down
	tools     []Tool
	lastError string
	since     time.Time
}

func (u *upstream) isUp() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.session != nil
}

// run connects, lists, and waits for the session's end, again and again
// until ctx ends.
func (u *upstream) run(ctx context.Context) {
	backoff := minBackoff
	first := true
	for ctx.Err() == nil {
		cs, tools, err := u.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			msg := u.scrub("connecting: " + err.Error())
			u.setDown(msg, false)
			u.logger.Warn("upstream unreachable", "error", msg, "retry_in", backoff)
			if first {
				close(u.firstTry)
				first = false
			}
			if !sleep(ctx, backoff) {
				break
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		connected := time.Now()
		u.setUp(cs, tools)
		u.logger.Info("upstream connected", "tools", len(tools), "protocol", protocolOf(cs))
		if first {
			close(u.firstTry)
			first = false
		}
		why := u.serve(ctx, cs)
		if ctx.Err() != nil {
			break
		}
		u.setDown(why, true)
		u.logger.Warn("upstream down", "error", why)
		if time.Since(connected) >= steadyAfter {
			backoff = minBackoff
		} else {
			// A session that ends as soon as it begins is retried as a
			// failed connection is.
			if !sleep(ctx, backoff) {
				break
			}
			backoff = min(2*backoff, maxBackoff)
		}
	}
	if first {
		close(u.firstTry)
	}
	u.setDown("stopped", false)
}

// serve keeps one session until it ends or ctx does, listing the tools
// again on tools/list_changed; it closes the session (which ends a
// command) and says why it ended.
func (u *upstream) serve(ctx context.Context, cs *mcp.ClientSession) string {
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	defer func() {
		_ = cs.Close()
	}()
	for {
		select {
		case <-ctx.Done():
			return "stopped"
		case err := <-ended:
			if err == nil {
				return "the session ended"
			}
			return u.scrub("the session ended: " + err.Error())
		case <-u.relist:
			lctx, cancel := context.WithTimeout(ctx, connectTimeout)
			tools, err := u.list(lctx, cs)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return "stopped"
				}
				return u.scrub("listing tools after tools/list_changed: " + err.Error())
			}
			u.mu.Lock()
			if u.session == cs {
				u.tools = tools
			}
			u.mu.Unlock()
			u.logger.Info("upstream tools changed", "tools", len(tools))
			u.g.changedNow()
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (u *upstream) setUp(cs *mcp.ClientSession, tools []Tool) {
	u.mu.Lock()
	u.session, u.tools, u.lastError, u.since = cs, tools, "", time.Now()
	u.mu.Unlock()
	u.g.changedNow()
}

// setDown marks the upstream down with why; changed says whether its
// tools left the list.
func (u *upstream) setDown(why string, changed bool) {
	u.mu.Lock()
	wasUp := u.session != nil
	u.session, u.tools, u.lastError = nil, nil, why
	if wasUp || u.since.IsZero() {
		u.since = time.Now()
	}
	u.mu.Unlock()
	if changed && wasUp {
		u.g.changedNow()
	}
}

// connect opens a session and lists its tools.
func (u *upstream) connect(ctx context.Context) (*mcp.ClientSession, []Tool, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "countersign-gateway", Version: "1"}, &mcp.ClientOptions{
		// No roots: an upstream's reach is its own configuration's (the
		// filesystem server, offered roots, would take them for its
		// allowed directories).
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case u.relist <- struct{}{}:
			default:
			}
		},
	})
	var t mcp.Transport
	if len(u.cfg.Command) > 0 {
		cmd := exec.Command(u.cfg.Command[0], u.cfg.Command[1:]...)
		cmd.Env = os.Environ()
		for _, k := range sortedKeys(u.cfg.Env) {
			cmd.Env = append(cmd.Env, k+"="+u.cfg.Env[k])
		}
		cmd.Stderr = &lineLogger{logger: u.logger, scrub: u.scrub}
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateGrace}
	} else {
		t = &mcp.StreamableClientTransport{
			Endpoint:   u.cfg.URL,
			HTTPClient: &http.Client{Transport: &headerTransport{headers: u.cfg.Headers, next: http.DefaultTransport}},
		}
	}
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	cs, err := client.Connect(cctx, t, nil)
	if err != nil {
		return nil, nil, err
	}
	tools, err := u.list(cctx, cs)
	if err != nil {
		_ = cs.Close()
		return nil, nil, fmt.Errorf("listing tools: %w", err)
	}
	return cs, tools, nil
}

// list lists the session's tools as the gateway exposes them.
func (u *upstream) list(ctx context.Context, cs *mcp.ClientSession) ([]Tool, error) {
	var tools []Tool
	for mt, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		t, why := u.toolOf(mt)
		if why != "" {
			u.logger.Warn("upstream tool left out", "tool", mt.Name, "reason", why)
			continue
		}
		tools = append(tools, t)
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Exposed < tools[j].Exposed })
	return tools, nil
}

// toolOf is mt as the gateway exposes it, or why it is left out.
func (u *upstream) toolOf(mt *mcp.Tool) (Tool, string) {
	exposed := u.cfg.Name + Separator + mt.Name
	switch {
	case !toolName.MatchString(mt.Name):
		return Tool{}, "its name is not made of A-Z, a-z, 0-9, _, - and ."
	case len(exposed) > MaxExposed:
		return Tool{}, fmt.Sprintf("%s is longer than %d characters", exposed, MaxExposed)
	}
	in, err := json.Marshal(mt.InputSchema)
	if err != nil {
		return Tool{}, "its input schema: " + err.Error()
	}
	var out json.RawMessage
	if mt.OutputSchema != nil {
		if out, err = json.Marshal(mt.OutputSchema); err != nil {
			return Tool{}, "its output schema: " + err.Error()
		}
	}
	t := Tool{
		Upstream: u.cfg.Name, Name: mt.Name, Exposed: exposed,
		Title: mt.Title, Description: mt.Description,
		InputSchema: in, OutputSchema: out,
	}
	if a := mt.Annotations; a != nil {
		ro, idem := a.ReadOnlyHint, a.IdempotentHint
		t.Annotations = Annotations{ReadOnly: &ro, Idempotent: &idem,
			Destructive: a.DestructiveHint, OpenWorld: a.OpenWorldHint, Title: a.Title}
		if t.Title == "" {
			t.Title = a.Title
		}
	}
	t.Read = slices.Contains(u.cfg.Reads, mt.Name) ||
		(u.cfg.Trusted && t.Annotations.ReadOnly != nil && *t.Annotations.ReadOnly)
	t.Idempotent = slices.Contains(u.cfg.Idempotent, mt.Name) ||
		(u.cfg.Trusted && t.Annotations.Idempotent != nil && *t.Annotations.Idempotent)
	return t, ""
}

// CallError is a call that did not come back with a result.
type CallError struct {
	Upstream, Tool string
	// Code says what happened: "rpc_error" (the upstream answered with a
	// JSON-RPC error), "invalid_arguments" (not sent: not a JSON object),
	// "connection_lost" or "call_timeout" (sent, no answer: the upstream
	// may have run it).
	Code    string
	Message string // no credential
	// RPCCode is the JSON-RPC error's code, for "rpc_error".
	RPCCode int64
}

func (e *CallError) Error() string {
	return e.Upstream + Separator + e.Tool + ": " + e.Code + ": " + e.Message
}

// Written reports whether the call reached the upstream, or may have.
func (e *CallError) Written() bool { return e.Code != CodeInvalidArguments }

// call performs one tools/call of the upstream's tool name. A nil session
// is a *DownError (nothing sent).
func (u *upstream) call(ctx context.Context, name string, args json.RawMessage, meta mcp.Meta) (*mcp.CallToolResult, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if args[0] != '{' || !json.Valid(args) {
		return nil, &CallError{Upstream: u.cfg.Name, Tool: name, Code: CodeInvalidArguments,
			Message: "the arguments are not a JSON object"}
	}
	u.mu.Lock()
	cs := u.session
	u.mu.Unlock()
	if cs == nil {
		return nil, &DownError{Upstream: u.cfg.Name}
	}
	timeout := u.cfg.CallTimeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Over HTTP, whether the request went out is the transport's to say:
	// the Go SDK reports any failure of the POST alike, also one after the
	// request was written.
	var wrote atomic.Bool
	cctx = httptrace.WithClientTrace(cctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				wrote.Store(true)
			}
		},
	})
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Meta: meta, Name: name, Arguments: args})
	if err == nil {
		return res, nil
	}
	ce := &CallError{Upstream: u.cfg.Name, Tool: name}
	if rpc := answered(err); rpc != nil {
		ce.Code, ce.Message, ce.RPCCode = CodeRPCError, u.scrub(rpc.Message), rpc.Code
		return nil, ce
	}
	if u.cfg.URL != "" && !wrote.Load() {
		// Nothing reached the upstream.
		down := &DownError{Upstream: u.cfg.Name, Reason: u.scrub(err.Error())}
		if cctx.Err() == nil {
			u.drop(cs, down.Reason)
		}
		return nil, down
	}
	switch {
	case cctx.Err() != nil:
		ce.Code = CodeCallTimeout
		if ctx.Err() != nil {
			ce.Message = "the call's context ended before an answer: " + ctx.Err().Error()
		} else {
			ce.Message = fmt.Sprintf("no answer within %s", timeout)
		}
	default:
		ce.Code, ce.Message = CodeConnectionLost, u.scrub(err.Error())
		// The session may look alive (an HTTP upstream has no process to
		// exit): drop it, so that the loop connects again and nothing else
		// is sent on it meanwhile.
		u.drop(cs, ce.Message)
	}
	return nil, ce
}

// drop takes cs out of use (calls meanwhile find the upstream down) and
// closes it; the connection loop then connects again.
func (u *upstream) drop(cs *mcp.ClientSession, why string) {
	u.mu.Lock()
	mine := u.session == cs
	if mine {
		u.session, u.tools, u.lastError, u.since = nil, nil, why, time.Now()
	}
	u.mu.Unlock()
	if mine {
		u.g.changedNow()
	}
	_ = cs.Close()
}

// The Go SDK's own JSON-RPC errors, made on this side: the connection
// closing, or the transport failing a request (-32005, "rejected by
// transport", which it also uses for a POST that failed after it was
// written). None is the upstream's answer.
const (
	codeClientClosing       = -32003
	codeServerClosing       = -32004
	codeRejectedByTransport = -32005
)

// answered returns the JSON-RPC error the upstream answered with, or nil
// when err is not one (the Go SDK's own codes aside).
func answered(err error) *jsonrpc.Error {
	var found *jsonrpc.Error
	walk(err, func(e error) {
		if rpc, ok := e.(*jsonrpc.Error); ok && found == nil {
			switch rpc.Code {
			case codeClientClosing, codeServerClosing, codeRejectedByTransport:
			default:
				found = rpc
			}
		}
	})
	return found
}

// walk calls fn on err and every error it wraps.
func walk(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch w := err.(type) {
	case interface{ Unwrap() error }:
		walk(w.Unwrap(), fn)
	case interface{ Unwrap() []error }:
		for _, e := range w.Unwrap() {
			walk(e, fn)
		}
	}
}

// scrub takes every header value, environment value and URL credential of
// the upstream's configuration out of s.
func (u *upstream) scrub(s string) string {
	var secrets []string
	for _, v := range u.cfg.Headers {
		secrets = append(secrets, v)
		// "Bearer xyz": the token alone may be quoted too.
		if _, tok, ok := strings.Cut(v, " "); ok {
			secrets = append(secrets, tok)
		}
	}
	for _, v := range u.cfg.Env {
		if len(v) >= 6 {
			secrets = append(secrets, v)
		}
	}
	if p, err := url.Parse(u.cfg.URL); err == nil && p.User != nil {
		secrets = append(secrets, u.cfg.URL, p.User.String())
		if pw, ok := p.User.Password(); ok {
			secrets = append(secrets, pw)
		}
	}
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	for _, v := range secrets {
		if v != "" {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

// headerTransport sets the upstream's headers on every request.
type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.next.RoundTrip(r)
}

// lineLogger logs a command's standard error, a line at a time, at debug.
type lineLogger struct {
	logger *slog.Logger
	scrub  func(string) string
	mu     sync.Mutex
	buf    []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(l.buf[:i])); line != "" {
			l.logger.Debug("upstream stderr", "line", l.scrub(line))
		}
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 4096 {
		l.logger.Debug("upstream stderr", "line", l.scrub(string(l.buf)))
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// protocolOf is the MCP revision the session negotiated.
func protocolOf(cs *mcp.ClientSession) string {
	if r := cs.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}
