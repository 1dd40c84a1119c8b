package mcpserver

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxWait is the longest wait_for_outcome waits: a transport must let a
// tool call's answer take this long (and a call's time beyond it).
const MaxWait = 10 * time.Minute

// wait_for_outcome waits defaultWait unless told otherwise, and long-polls
// countersign pollEvery at a time, so a client that resets its timeout on
// progress hears from it that often.
const (
	defaultWait = 45 * time.Second
	pollEvery   = 15 * time.Second
)

type waitArgs struct {
	Ref string `json:"ref"`
	// TimeoutSeconds is nil when the model did not say: 0 is refused, not
	// taken for the default.
	TimeoutSeconds *int `json:"timeout_seconds"`
}

// waitForOutcome long-polls the request until it is settled, awaits its
// agent (an agent-executed write approved: the result carries the receipt),
// or the wait ends, sending a progress notification (when the client gave a token)
// when it starts and after every poll, with the sentence of where the
// request stands.
func (h *handlers) waitForOutcome(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args waitArgs
	if res := decodeArgs(req.Params.Arguments, &args); res != nil {
		return res, nil
	}
	if args.Ref == "" {
		return argumentError("/ref", "ref is required: the request's key (wa_…) or id"), nil
	}
	wait := defaultWait
	if args.TimeoutSeconds != nil {
		if secs := *args.TimeoutSeconds; secs < 1 || time.Duration(secs)*time.Second > MaxWait {
			return argumentError("/timeout_seconds", fmt.Sprintf("timeout_seconds must be a whole number from 1 to %d", int(MaxWait.Seconds()))), nil
		}
		wait = time.Duration(*args.TimeoutSeconds) * time.Second
	}
	deadline := time.Now().Add(wait)

	getCtx, cancel := context.WithTimeout(ctx, h.callTimeout)
	r, err := h.client.Get(getCtx, args.Ref)
	cancel()
	token := req.Params.GetProgressToken()
	progress := 0.0
	for err == nil {
		if token != nil {
			progress++
			// A progress notification that cannot be sent changes nothing
			// about the wait.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: progress, Message: Sentence(r)})
		}
		left := time.Until(deadline)
		if r.Settled || r.AwaitsOutcome() || left <= 0 {
			break
		}
		poll := min(left, pollEvery)
		pollCtx, cancel := context.WithTimeout(ctx, poll+h.callTimeout)
		r, err = h.client.Poll(pollCtx, args.Ref, r.Version, poll)
		cancel()
	}
	if err != nil {
		return toolError(err), nil
	}
	res := requestResult(r)
	if !r.Settled && !r.AwaitsOutcome() {
		res.Content = []mcp.Content{&mcp.TextContent{Text: Sentence(r) + " (not settled yet: call wait_for_outcome again to keep waiting)"}}
	}
	return res, nil
}
