package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/identity"
	"github.com/countersign/countersign/wire"
)

// The fields of a write other than its tool and effect, as POST
// /v1/requests takes them; request_write and every typed tool share them.
const (
	runIDSchema   = `{"type": "string", "minLength": 1, "description": "The id of the agent run deciding to write. It enters the key: keep it the same when you retry."}`
	stepSchema    = `{"type": ["integer", "string"], "description": "The step of the run that decided the write, used exactly as given (6 and \"6\" are different steps). It enters the key: keep it the same when you retry."}`
	summarySchema = `{"type": "string", "description": "One line for the reviewer saying what the write does. Not part of the key."}`
	reasonSchema  = `{"type": "string", "description": "Why the write is needed, for the reviewer. Not part of the key."}`
	keySchema     = `{"type": "string", "pattern": "^[A-Za-z0-9._~:/+=-]{8,255}$", "description": "Only when this write was already tried under a key of your own: that key, instead of the derived one. 8 to 255 letters, digits and -_.:~/+=; one beginning with wa_ must be the derived key."}`
	refSchema     = `{"type": "object", "required": ["ref"], "additionalProperties": false, "properties": {"ref": {"type": "string", "description": "The request's key (wa_…) or id, as a request_* tool returned it."}}}`
)

// requestedForSchema is requested_for as countersign reads it: one person,
// in the words and the pattern of package identity, which the server holds
// it to.
var requestedForSchema = func() string {
	b, err := json.Marshal(map[string]any{"type": "string", "maxLength": identity.MaxLen, "pattern": identity.PersonPattern,
		"description": "Who the write is for: " + identity.PersonForms + ". That person may not approve it."})
	if err != nil {
		panic(err) // constants only
	}
	return string(b)
}()

const retrySafe = "Calling it again with the same arguments is safe: the key is derived from run_id, step, tool and effect, so a retry returns the same request and stores nothing new."

// policyDecides tells a model that the tool's policy may answer without a
// person, and what each answer means for what it does next.
const policyDecides = "The tool's policy may decide without a person: a write it allows comes back already approved (by policy:<rule>), so wait_for_outcome for its execution; one it denies is a tool error denied_by_policy, which the same arguments always get again. "

// fixedTools are the tools every agent gets, whatever its configuration.
func (h *handlers) fixedTools() []served {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	return []served{
		{&mcp.Tool{
			Name:        "list_tools",
			Description: "Lists the tools you may ask countersign to write with: each one's description, whether its write can be undone, who approves it and how many approvals it needs, and the JSON Schema its effect must satisfy. Call it to learn what request_write accepts.",
			InputSchema: json.RawMessage(`{"type": "object", "additionalProperties": false}`),
			Annotations: readOnly,
		}, h.listTools},
		{&mcp.Tool{
			Name: "request_write",
			Description: "Asks a person to approve a write; once approved, countersign performs exactly that write, once. Returns the request at once (status pending): then call wait_for_outcome with its key. " +
				"The arguments are the body of countersign's POST /v1/requests: tool, effect, run_id, step, and for the reviewer summary, reason and requested_for. Prefer the typed request_<tool> tools, whose schema shows the effect's fields. " +
				policyDecides + retrySafe,
			InputSchema: json.RawMessage(`{"type": "object", "required": ["tool", "effect", "run_id", "step"], "additionalProperties": false, "properties": {` +
				`"tool": {"type": "string", "description": "The tool's name, as list_tools names it."}, ` +
				`"effect": {"type": "object", "description": "The write's fields, exactly as the tool's provider will receive them; it must satisfy the tool's effect_schema."}, ` +
				`"run_id": ` + runIDSchema + `, "step": ` + stepSchema + `, "summary": ` + summarySchema + `, "reason": ` + reasonSchema +
				`, "requested_for": ` + requestedForSchema + `, "idempotency_key": ` + keySchema + `}}`),
			Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(true)},
		}, h.requestWrite},
		{&mcp.Tool{
			Name:        "get_request",
			Description: "Returns a request as it stands now: its status, the review's votes and decision, and its execution. It does not wait; use wait_for_outcome to wait for the outcome.",
			InputSchema: json.RawMessage(refSchema),
			Annotations: readOnly,
		}, h.getRequest},
		{&mcp.Tool{
			Name:        "list_requests",
			Description: "Lists your requests, newest first, one page at a time; pass next_cursor back as cursor for the next page. Filters: status, tool, run_id, settled.",
			InputSchema: json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {` +
				`"status": {"enum": ["pending", "approved", "rejected", "expired", "cancelled", "edited"]}, ` +
				`"tool": {"type": "string"}, "run_id": {"type": "string"}, ` +
				`"settled": {"type": "boolean", "description": "true: only requests whose outcome can no longer change; false: only the others."}, ` +
				`"limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Requests per page, default 20."}, ` +
				`"cursor": {"type": "string", "description": "next_cursor of the previous page."}}}`),
			Annotations: readOnly,
		}, h.listRequests},
		{&mcp.Tool{
			Name: "wait_for_outcome",
			Description: "Waits until the request is settled (rejected, expired, cancelled, edited by a reviewer into a new request named by superseded_by, or its write succeeded or failed), or approved for you to perform yourself (a tool whose writes the agent performs: the result carries the receipt), or timeout_seconds pass, and returns it; while it waits it sends progress notifications when you gave a progress token. " +
				"A person decides, so this can take minutes or hours: if the result says the request is not settled yet, call it again. Calling it again is always safe.",
			InputSchema: json.RawMessage(`{"type": "object", "required": ["ref"], "additionalProperties": false, "properties": {` +
				`"ref": {"type": "string", "description": "The request's key (wa_…) or id."}, ` +
				fmt.Sprintf(`"timeout_seconds": {"type": "integer", "minimum": 1, "maximum": %d, "description": "How long to wait at most, default %d."}}}`, int(MaxWait.Seconds()), int(defaultWait.Seconds()))),
			Annotations: readOnly,
		}, h.waitForOutcome},
		{&mcp.Tool{
			Name: "report_outcome",
			Description: "Reports how a write you performed yourself went: only for a request approved for you to perform (its result said so and carried a receipt). " +
				"Reporting the same outcome again is safe; a different one after it is refused with outcome_conflict.",
			InputSchema: json.RawMessage(`{"type": "object", "required": ["ref", "status"], "additionalProperties": false, "properties": {` +
				`"ref": {"type": "string", "description": "The request's key (wa_…) or id."}, ` +
				`"status": {"enum": ["succeeded", "failed"], "description": "Whether the write happened."}, ` +
				`"provider_ref": {"type": "string", "maxLength": 4096, "description": "The provider's id of the write, if it gave one."}, ` +
				`"detail": {"type": "string", "maxLength": 4096, "description": "What went wrong, for a failure; anything worth keeping otherwise."}}}`),
			Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false)},
		}, h.reportOutcome},
		{&mcp.Tool{
			Name:        "cancel_request",
			Description: "Withdraws a request still pending, so it is never performed. A request already decided is refused with already_decided.",
			InputSchema: json.RawMessage(refSchema),
			Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(true)},
		}, h.cancelRequest},
	}
}

// The arguments of request_write, and of a typed tool with its tool's
// name added, are the body of POST /v1/requests: a wire.Intent.

func (h *handlers) requestWrite(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args wire.Intent
	if res := decodeArgs(req.Params.Arguments, &args); res != nil {
		return res, nil
	}
	return h.submit(ctx, args)
}

// submit posts the write; countersign checks every field, so its refusal
// (with the JSON pointer of the argument at fault) is what the model reads.
func (h *handlers) submit(ctx context.Context, args wire.Intent) (*mcp.CallToolResult, error) {
	in := client.Intent{RunID: args.RunID, Tool: args.Tool, Summary: args.Summary, Reason: args.Reason,
		RequestedFor: args.RequestedFor, IdempotencyKey: args.IdempotencyKey}
	// A missing step or effect is sent as null, for countersign to name.
	in.Step, in.Effect = rawOrNull(args.Step), rawOrNull(args.Effect)
	ctx, cancel := context.WithTimeout(ctx, h.callTimeout)
	defer cancel()
	r, err := h.client.Request(ctx, in)
	var keyErr *client.InvalidKeyError
	if errors.As(err, &keyErr) {
		// The client refuses the key as countersign would, before sending.
		return argumentError("/idempotency_key", keyErr.Reason), nil
	}
	if err != nil {
		return toolError(err), nil
	}
	return requestResult(r), nil
}

func rawOrNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// refArgs name one request.
type refArgs struct {
	Ref string `json:"ref"`
}

func (h *handlers) getRequest(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args refArgs
	if res := decodeRef(req.Params.Arguments, &args); res != nil {
		return res, nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.callTimeout)
	defer cancel()
	r, err := h.client.Get(ctx, args.Ref)
	if err != nil {
		return toolError(err), nil
	}
	return requestResult(r), nil
}

func (h *handlers) reportOutcome(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Ref string `json:"ref"`
		wire.Outcome
	}
	if res := decodeArgs(req.Params.Arguments, &args); res != nil {
		return res, nil
	}
	if strings.TrimSpace(args.Ref) == "" {
		return argumentError("/ref", "ref is required: the request's key (wa_…) or id"), nil
	}
	if args.Status != wire.OutcomeSucceeded && args.Status != wire.OutcomeFailed {
		return argumentError("/status", "status must be succeeded or failed"), nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.callTimeout)
	defer cancel()
	r, err := h.client.ReportOutcome(ctx, args.Ref, args.Outcome)
	if err != nil {
		return toolError(err), nil
	}
	return requestResult(r), nil
}

func (h *handlers) cancelRequest(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args refArgs
	if res := decodeRef(req.Params.Arguments, &args); res != nil {
		return res, nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.callTimeout)
	defer cancel()
	r, err := h.client.Cancel(ctx, args.Ref)
	if err != nil {
		return toolError(err), nil
	}
	return requestResult(r), nil
}

// decodeRef decodes arguments that name one request, refusing an empty ref
// here: an empty path segment would name another route.
func decodeRef(raw json.RawMessage, args *refArgs) *mcp.CallToolResult {
	if res := decodeArgs(raw, args); res != nil {
		return res
	}
	if strings.TrimSpace(args.Ref) == "" {
		return argumentError("/ref", "ref is required: the request's key (wa_…) or id")
	}
	return nil
}

func (h *handlers) listTools(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct{}
	if res := decodeArgs(req.Params.Arguments, &args); res != nil {
		return res, nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.callTimeout)
	defer cancel()
	tools, err := h.client.Tools(ctx)
	if err != nil {
		return toolError(err), nil
	}
	typed, _ := typedNames(tools)
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
		if name, ok := typed[t.Name]; ok {
			names[i] += " (" + name + ")"
		}
	}
	sentence := fmt.Sprintf("%d tools: %s.", len(tools), strings.Join(names, ", "))
	if len(tools) == 0 {
		sentence = "No tools are configured for this agent."
	}
	return result(sentence, map[string]any{"tools": tools}), nil
}

// maxListLimit is the largest page list_requests asks for, the API's.
const maxListLimit = 100

// listArgs are list_requests' filters.
type listArgs struct {
	Status  string `json:"status"`
	Tool    string `json:"tool"`
	RunID   string `json:"run_id"`
	Settled *bool  `json:"settled"`
	// Limit is nil when the model did not say: 0 is refused, as the API
	// refuses limit=0, not taken for the default.
	Limit  *int   `json:"limit"`
	Cursor string `json:"cursor"`
}

func (h *handlers) listRequests(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args listArgs
	if res := decodeArgs(req.Params.Arguments, &args); res != nil {
		return res, nil
	}
	limit := 0 // the API's default
	if args.Limit != nil {
		if *args.Limit < 1 || *args.Limit > maxListLimit {
			return argumentError("/limit", fmt.Sprintf("limit must be a whole number from 1 to %d", maxListLimit)), nil
		}
		limit = *args.Limit
	}
	ctx, cancel := context.WithTimeout(ctx, h.callTimeout)
	defer cancel()
	page, err := h.client.List(ctx, client.ListParams{Status: client.Status(args.Status), Tool: args.Tool, RunID: args.RunID,
		Settled: args.Settled, Limit: limit, Cursor: args.Cursor})
	if err != nil {
		return toolError(err), nil
	}
	var next any // null when no page follows, as the API says it
	sentence := fmt.Sprintf("%d requests; no more pages.", len(page.Requests))
	if page.NextCursor != "" {
		next = page.NextCursor
		sentence = fmt.Sprintf("%d requests; more follow: pass next_cursor as cursor.", len(page.Requests))
	}
	requests := page.Requests
	if requests == nil {
		requests = []client.Request{}
	}
	return result(sentence, map[string]any{"requests": requests, "next_cursor": next}), nil
}
