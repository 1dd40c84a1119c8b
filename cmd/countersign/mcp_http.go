package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/mcpserver"
)

// mcpSessionIdle closes an MCP session nobody used for this long.
const mcpSessionIdle = time.Hour

// mcpHandler serves /mcp: MCP over streamable HTTP, behind the agent API's
// bearer tokens. Each session is the agent whose token opened it (a request
// of another agent for it is 403), and its tools call the agent API as that
// agent, in process, through api: the same authentication, checks, metrics
// and Request-Ids as over the network, with no second socket to this
// process, whatever address it listens on.
func (a *app) mcpHandler(agents *hook.AgentSet, api http.Handler) http.Handler {
	streamable := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		c := client.New("http://countersign.invalid", bearerToken(r),
			client.WithHTTPClient(&http.Client{Transport: inProcess{api}, Timeout: hook.MaxWait + 30*time.Second}))
		server, err := mcpserver.New(r.Context(), mcpserver.Config{Client: c, Version: versionString(), Logger: a.logger.With("component", "mcp")})
		if err != nil {
			a.logger.Error("starting an MCP session", "error", err)
			return nil // the SDK answers 400
		}
		return server
	}, &mcp.StreamableHTTPOptions{
		Logger: a.logger.With("component", "mcp"), SessionTimeout: mcpSessionIdle,
		// The SDK refuses a loopback peer that names another host, against
		// DNS rebinding; every call here needs the agent's token, which a
		// rebinding page does not have, and a reverse proxy on this machine
		// (forwarding the public Host) is a loopback peer naming another host.
		DisableLocalhostProtection: true,
	})
	// The SDK ties a session to the TokenInfo's UserID it was opened with.
	bound := auth.RequireBearerToken(func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		agent, ok := agents.Authenticate("Bearer " + token)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: agent.Name}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(streamable)
	return agents.AgentOnly(func(w http.ResponseWriter, r *http.Request, _ approvals.Agent) {
		// A tool call's answer streams until wait_for_outcome ends, longer
		// than the server's write timeout allows the API's answers.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(mcpserver.MaxWait + time.Minute))
		bound.ServeHTTP(w, r)
	})
}

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
