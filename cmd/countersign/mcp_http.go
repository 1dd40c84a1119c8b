package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/internal/requestid"
	"github.com/countersign/countersign/mcpserver"
)

// mcpMaxBody bounds an MCP message: the API's largest body, with room for
// the JSON-RPC envelope around it.
const mcpMaxBody = approvals.MaxBodyBytes + 64<<10

// mcpHandler serves /mcp: MCP over streamable HTTP, behind the agent API's
// bearer tokens. It keeps no session: each POST is served whole by a
// server built for it, as the agent whose token it carries, and its tools
// call the agent API in process through api (the same authentication,
// checks, metrics and Request-Ids as over the network, with no second
// socket to this process, whatever address it listens on). An initialize
// is answered with a session id that says which agent opened it and when,
// signed with a key derived from the dispatch secret every replica is
// given, so any replica, and this one after a restart, serves the session;
// another agent's token in it is 403. Every refusal is the API's envelope
// with a Request-Id.
func (a *app) mcpHandler(agents *hook.AgentSet, api http.Handler) http.Handler {
	logger := a.logger.With("component", "mcp")
	ids := mcpserver.NewSessionIDs(a.cfg.DispatchSecrets())
	if len(a.cfg.DispatchSecrets()) == 0 {
		logger.Warn("COUNTERSIGN_DISPATCH_SECRET is not set: MCP sessions over HTTP are this process's alone, and end when it stops")
	}
	streamable := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		server, _ := r.Context().Value(mcpServerKey{}).(*mcp.Server)
		return server
	}, &mcp.StreamableHTTPOptions{
		Stateless: true, Logger: logger, MaxRequestBodyBytes: mcpMaxBody,
		// The SDK refuses a loopback peer that names another host, against
		// DNS rebinding; every call here needs the agent's token, which a
		// rebinding page does not have, and a reverse proxy on this machine
		// (forwarding the public Host) is a loopback peer naming another host.
		DisableLocalhostProtection: true,
	})
	return requestid.Middleware(agents.AgentOnly(func(w http.ResponseWriter, r *http.Request, agent approvals.Agent) {
		// A tool call's answer streams until wait_for_outcome ends, longer
		// than the server's write timeout allows the API's answers.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(mcpserver.MaxWait + time.Minute))
		call, ok := a.admitMCP(w, r, agent, ids)
		if !ok {
			return
		}
		c := client.New("http://countersign.invalid", bearerToken(r),
			client.WithHTTPClient(&http.Client{Transport: inProcess{api}, Timeout: hook.MaxWait + 30*time.Second}))
		server, err := mcpserver.New(r.Context(), mcpserver.Config{Client: c, Version: versionString(), Logger: logger,
			Session: r.Header.Get(mcpSessionHeader)})
		if err != nil {
			refuseMCPServer(w, r, err)
			return
		}
		if call.initialize {
			w.Header().Set(mcpSessionHeader, ids.Issue(agent.Name, time.Now()))
		}
		r = r.WithContext(context.WithValue(r.Context(), mcpServerKey{}, server))
		r.Body = io.NopCloser(bytes.NewReader(call.body))
		sw := &sdkRefusals{ResponseWriter: w}
		streamable.ServeHTTP(sw, r)
		sw.finish(r)
	}))
}

// mcpServerKey carries the server built for a request to the SDK's handler.
type mcpServerKey struct{}

// mcpSessionHeader names a session in MCP over HTTP.
const mcpSessionHeader = "Mcp-Session-Id"

// bearerToken is the token of the request's Authorization header, which
// AgentOnly has checked.
func bearerToken(r *http.Request) string {
	_, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return strings.TrimLeft(token, " ")
}

// inProcess is an http.RoundTripper that serves each request with a
// handler in this process and returns its answer, read whole (the API's
// answers are small; a long-poll answers once).
type inProcess struct{ handler http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	in := req.Clone(req.Context())
	if in.Body == nil {
		in.Body = http.NoBody
	}
	in.RequestURI = req.URL.RequestURI()
	in.RemoteAddr = "127.0.0.1:0"
	rec := &recorder{header: http.Header{}}
	t.handler.ServeHTTP(rec, in)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	return &http.Response{
		Status: http.StatusText(rec.status), StatusCode: rec.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rec.header, Body: io.NopCloser(bytes.NewReader(rec.body.Bytes())), ContentLength: int64(rec.body.Len()), Request: req,
	}, nil
}

// recorder keeps what a handler answered.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
