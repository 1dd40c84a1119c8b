package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"strings"
	"sync"
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
	servers := newMCPServers()
	streamable := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		server, _ := r.Context().Value(mcpServerKey{}).(*mcp.Server)
		return server
	}, &mcp.StreamableHTTPOptions{
		Stateless: true, Logger: quietSDK(logger), MaxRequestBodyBytes: mcpMaxBody,
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
		server, err := servers.get(r, a.toolsGeneration.Load(), func() (*mcp.Server, error) {
			c := client.New("http://countersign.invalid", bearerToken(r),
				client.WithHTTPClient(&http.Client{Transport: inProcess{api}, Timeout: hook.MaxWait + 30*time.Second}))
			return mcpserver.New(r.Context(), mcpserver.Config{Client: c, Version: versionString(), Logger: quietSDK(logger),
				Session: r.Header.Get(mcpSessionHeader)})
		})
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

// mcpServers keeps the MCP server built for an agent's token and session,
// so that a session's calls do not list the tools again each time: a
// server is kept for mcpServerTTL, and never past a change of the tools
// (a reload, an upstream's list), which moves the generation on. The
// token is checked on every request before its server is taken.
type mcpServers struct {
	mu      sync.Mutex
	servers map[[32]byte]cachedMCPServer
}

type cachedMCPServer struct {
	server     *mcp.Server
	generation uint64
	built      time.Time
}

// mcpServerTTL bounds how long a built server is reused, and
// maxMCPServers how many are kept.
const (
	mcpServerTTL  = 30 * time.Second
	maxMCPServers = 1024
)

func newMCPServers() *mcpServers { return &mcpServers{servers: map[[32]byte]cachedMCPServer{}} }

// get returns the server of r's token and session at generation, built
// by build when there is none to reuse.
func (s *mcpServers) get(r *http.Request, generation uint64, build func() (*mcp.Server, error)) (*mcp.Server, error) {
	key := sha256.Sum256([]byte(bearerToken(r) + "\x00" + r.Header.Get(mcpSessionHeader)))
	now := time.Now()
	s.mu.Lock()
	c, ok := s.servers[key]
	s.mu.Unlock()
	if ok && c.generation == generation && now.Sub(c.built) < mcpServerTTL {
		return c.server, nil
	}
	server, err := build()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.servers) >= maxMCPServers {
		for k, old := range s.servers {
			if old.generation != generation || now.Sub(old.built) >= mcpServerTTL {
				delete(s.servers, k)
			}
		}
		if len(s.servers) >= maxMCPServers {
			clear(s.servers)
		}
	}
	s.servers[key] = cachedMCPServer{server: server, generation: generation, built: now}
	return server, nil
}
