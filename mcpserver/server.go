package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/wire"
)

// Config is what New builds a server from.
type Config struct {
	// Client calls countersign as the agent whose tools are served.
	Client *client.Client
	// CallTimeout bounds each call to countersign, its retries included
	// (default 30 s); wait_for_outcome adds its own wait to it. A call that
	// runs out is the tool error "unreachable".
	CallTimeout time.Duration
	// Version is the server's version in the MCP handshake.
	Version string
	// Logger receives the MCP SDK's own log lines; nil logs nothing.
	Logger *slog.Logger
	// FollowGateway, when set, lists the gateway's upstream tools again
	// this often for as long as New's ctx lasts, adding and removing
	// tools as they come and go (tools/list_changed): for a server that
	// lives as long as its process (countersign mcp over stdio).
	FollowGateway time.Duration
	// Session names the caller's MCP session when the transport keeps it
	// outside the SDK (serve's stateless HTTP, with its signed session
	// ids): a gated upstream call without a run of its own is keyed by it.
	Session string
}

// defaultCallTimeout is Config.CallTimeout's default: long enough for a few
// retries of a 503, short enough that a model hears of an outage.
const defaultCallTimeout = 30 * time.Second

// instructions tell a model, once per session, how the tools fit together.
const instructions = `countersign gates writes behind human approval. To make a write, call request_<tool> (or request_write) with the run, the step and the effect; a person approves or rejects it, and countersign then performs exactly the approved write, once. Call wait_for_outcome with the request's key to learn the outcome. Retrying a request with the same arguments is safe: it returns the same request and writes nothing new.`

// New fetches the agent's tools from countersign (GET /v1/tools and GET
// /v1/gateway/tools, once) and returns an MCP server with the fixed tools,
// the gateway's upstream tools under their own names, and one typed tool
// per other tool that has an effect_schema.
func New(ctx context.Context, cfg Config) (*mcp.Server, error) {
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = defaultCallTimeout
	}
	callCtx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	defer cancel()
	tools, err := cfg.Client.Tools(callCtx)
	if err != nil {
		return nil, fmt.Errorf("listing the agent's tools: %w", err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "countersign", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       cfg.Logger,
		// The tool list is fixed when the server is built, unless it
		// follows the gateway's.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: cfg.FollowGateway > 0}},
	})
	h := &handlers{client: cfg.Client, callTimeout: cfg.CallTimeout, tools: tools, session: cfg.Session}
	taken := map[string]bool{}
	for _, t := range h.fixedTools() {
		server.AddTool(t.tool, t.handle)
		taken[t.tool.Name] = true
	}
	// The gateway's upstream tools, under their own names; their gated
	// ones are countersign tools too, and get no typed request_ tool.
	gateway, err := cfg.Client.GatewayTools(callCtx)
	if err != nil && cfg.Logger != nil {
		cfg.Logger.Warn("the gateway's upstream tools could not be listed; serving countersign's own", slog.String("error", err.Error()))
	}
	viaGateway := map[string]bool{}
	served := map[string]wire.GatewayTool{}
	for _, t := range gateway {
		viaGateway[t.Name] = true
		if taken[t.Name] {
			continue
		}
		g := h.gatewayTool(t)
		server.AddTool(g.tool, g.handle)
		taken[t.Name], served[t.Name] = true, t
	}
	tools = slices.DeleteFunc(slices.Clone(tools), func(t client.Tool) bool { return viaGateway[t.Name] })
	names, skipped := typedNames(tools)
	for _, tool := range skipped {
		if cfg.Logger != nil {
			cfg.Logger.Warn("a tool's typed MCP tool would take a fixed tool's name or another tool's, or be longer than 64 characters; request it with request_write",
				slog.String("tool", tool))
		}
	}
	for _, t := range tools {
		name, ok := names[t.Name]
		if !ok {
			continue
		}
		typed, err := h.typedTool(t, name)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		server.AddTool(typed.tool, typed.handle)
		taken[typed.tool.Name] = true
	}
	if cfg.FollowGateway > 0 {
		for name := range served {
			delete(taken, name)
		}
		go h.followGateway(ctx, server, served, taken, cfg.FollowGateway, cfg.Logger)
	}
	return server, nil
}

// handlers holds what every tool's handler needs.
type handlers struct {
	client      *client.Client
	callTimeout time.Duration
	// tools are the agent's tools as listed when the server was built.
	tools []client.Tool
	// session is Config.Session.
	session string
}

// served is one MCP tool and its handler.
type served struct {
	tool   *mcp.Tool
	handle mcp.ToolHandler
}
