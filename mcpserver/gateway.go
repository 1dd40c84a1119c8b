package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/wire"
)

// The _meta names a caller gives a gated upstream call's run and step by
// (docs/GATEWAY.md). Without them the call's run is the MCP session and its
// step the constant gatewayStep: the same call with the same arguments in
// one session is then one write.
const (
	MetaRunID = "countersign/run_id"
	MetaStep  = "countersign/step"
)

// gatewayStep is the step of a call whose caller named none.
const gatewayStep = "call"

// defaultHold is how long a gated call waits for its outcome when its
// upstream does not say.
const defaultHold = 30 * time.Second

// processRun names the runs of sessions that have no id (stdio): one per
// process, so a restarted process asks again.
var processRun = func() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "mcp-process:" + hex.EncodeToString(b)
}()

// gatewayTool is an upstream's tool served under its own name and input
// schema: a read passes straight through; any other call is an intent of
// the countersign tool of the same name, its effect the arguments, and the
// call waits for the outcome of the approved call, which countersign makes
// once.
func (h *handlers) gatewayTool(t wire.GatewayTool) served {
	a := t.Annotations
	annotations := &mcp.ToolAnnotations{Title: a.Title, DestructiveHint: a.Destructive, OpenWorldHint: a.OpenWorld}
	if a.ReadOnly != nil {
		annotations.ReadOnlyHint = *a.ReadOnly
	}
	if a.Idempotent != nil {
		annotations.IdempotentHint = *a.Idempotent
	}
	how := " (through countersign: a read, passed straight through)"
	if !t.Read {
		how = " (through countersign: each call is reviewed first, by a person or the policy, then made once; " +
			"the call waits for its outcome, or answers with the pending request to wait_for_outcome on)"
	}
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type": "object"}`)
	}
	tool := &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description + how, InputSchema: schema, Annotations: annotations}
	if t.Read {
		return served{tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return h.passThrough(ctx, t.Name, req.Params.Arguments), nil
		}}
	}
	hold := time.Duration(t.HoldSeconds) * time.Second
	if hold <= 0 {
		hold = defaultHold
	}
	return served{tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return h.gatedCall(ctx, req, t.Name, hold), nil
	}}
}

// passThrough calls a read through countersign and answers its upstream's
// result as it came.
func (h *handlers) passThrough(ctx context.Context, tool string, args json.RawMessage) *mcp.CallToolResult {
	ctx, cancel := context.WithTimeout(ctx, h.callTimeout)
	defer cancel()
	raw, err := h.client.GatewayCall(ctx, tool, rawOrEmpty(args))
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.Code == "unavailable" && apiErr.Message != "" {
		// Its upstream is down: countersign answered, and says which.
		return errorResult(tool+" is not available now: "+apiErr.Message+" Calling it again later is safe: it is a read.",
			wire.Error{Code: apiErr.Code, Message: apiErr.Message, RequestID: apiErr.RequestID})
	}
	if err != nil {
		return toolError(err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return errorResult("the upstream's result could not be read: "+err.Error(), wire.Error{Code: "invalid_result", Message: err.Error()})
	}
	return &res
}

// gatedCall requests the call as a write, waits for it up to hold, and
// answers the upstream's own result once countersign made the call; before
// that, or when it will not be made, the sentence of where it stands.
func (h *handlers) gatedCall(ctx context.Context, req *mcp.CallToolRequest, tool string, hold time.Duration) *mcp.CallToolResult {
	in := client.Intent{Tool: tool, Effect: rawOrEmpty(req.Params.Arguments), RunID: h.sessionRun(req), Step: json.RawMessage(`"` + gatewayStep + `"`),
		Summary: tool + " called through the MCP gateway"}
	meta := req.Params.GetMeta()
	if run, ok := meta[MetaRunID].(string); ok && run != "" {
		in.RunID = run
	}
	if step, ok := meta[MetaStep]; ok && step != nil {
		b, err := json.Marshal(step)
		if err != nil {
			return argumentError("/_meta/"+MetaStep, "countersign/step must be a string or an integer")
		}
		in.Step = json.RawMessage(b)
	}
	callCtx, cancel := context.WithTimeout(ctx, h.callTimeout)
	r, err := h.client.Request(callCtx, in)
	cancel()
	if err != nil {
		return toolError(err)
	}
	deadline := time.Now().Add(hold)
	token := req.Params.GetProgressToken()
	progress := 0.0
	for err == nil && !r.Settled && !isAwaitingPerson(r) {
		if token != nil {
			progress++
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: progress, Message: Sentence(r)})
		}
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		poll := min(left, pollEvery)
		pollCtx, cancel := context.WithTimeout(ctx, poll+h.callTimeout)
		r, err = h.client.Poll(pollCtx, r.Key, r.Version, poll)
		cancel()
	}
	if err != nil {
		return toolError(err)
	}
	if res, ok := upstreamResult(r); ok {
		return res
	}
	res := requestResult(r)
	switch {
	case !r.Settled && !isAwaitingPerson(r):
		res.Content = []mcp.Content{&mcp.TextContent{Text: Sentence(r) + fmt.Sprintf(
			" (not made yet: call wait_for_outcome with ref %s to keep waiting; calling %s again with the same arguments in this session returns the same request)", r.Key, tool)}}
	case r.Status != client.StatusApproved:
		res.IsError = true
	}
	return res
}

// upstreamResult is the upstream's answer to the call countersign made,
// once the request's execution succeeded or failed with one.
func upstreamResult(r *client.Request) (*mcp.CallToolResult, bool) {
	e := r.Execution
	if e == nil || e.Response == nil || (e.State != client.ExecSucceeded && e.State != client.ExecFailed) {
		return nil, false
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(e.Response.Body, &res); err != nil || res.Content == nil {
		return nil, false
	}
	return &res, true
}

// isAwaitingPerson reports whether the request's execution waits for a
// person's review: a call whose connection was lost, say.
func isAwaitingPerson(r *client.Request) bool {
	return r.Execution != nil && r.Execution.State == client.ExecNeedsReview
}

// sessionRun is the run of a call whose caller named none: its MCP
// session (a digest of its id), or this process for a session without an
// id (stdio).
func (h *handlers) sessionRun(req *mcp.CallToolRequest) string {
	id := h.session
	if req.Session != nil && req.Session.ID() != "" {
		id = req.Session.ID()
	}
	if id == "" {
		return processRun
	}
	sum := sha256.Sum256([]byte(id))
	return "mcp-session:" + hex.EncodeToString(sum[:12])
}

func rawOrEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// followGateway lists the gateway's tools every so often until ctx ends and
// makes served, the upstream tools the server serves, what it lists: the
// SDK tells the session's client when they change. A name among taken
// (countersign's own tools) is never an upstream's.
func (h *handlers) followGateway(ctx context.Context, server *mcp.Server, served map[string]wire.GatewayTool, taken map[string]bool,
	every time.Duration, logger *slog.Logger) {
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		callCtx, cancel := context.WithTimeout(ctx, h.callTimeout)
		list, err := h.client.GatewayTools(callCtx)
		cancel()
		if err != nil {
			if logger != nil && ctx.Err() == nil {
				logger.Warn("the gateway's upstream tools could not be listed again", slog.String("error", err.Error()))
			}
			continue
		}
		now := map[string]wire.GatewayTool{}
		for _, t := range list {
			if !taken[t.Name] {
				now[t.Name] = t
			}
		}
		var gone []string
		for name, was := range served {
			if t, ok := now[name]; !ok || !sameTool(was, t) {
				gone = append(gone, name)
			}
		}
		if len(gone) > 0 {
			server.RemoveTools(gone...)
			for _, name := range gone {
				delete(served, name)
			}
		}
		for name, t := range now {
			if _, ok := served[name]; !ok {
				g := h.gatewayTool(t)
				server.AddTool(g.tool, g.handle)
				served[name] = t
			}
		}
	}
}

// sameTool reports whether a listed tool is served as it was: its up flag
// aside, which changes nothing a client sees.
func sameTool(a, b wire.GatewayTool) bool {
	a.Up, b.Up = false, false
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
