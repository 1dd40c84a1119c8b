package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/wire"
)

// result is a successful tool result: the structured value and the one
// sentence a model reads.
func result(sentence string, structured any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: sentence}}, StructuredContent: structured}
}

// requestResult is a request's tool result.
func requestResult(r *client.Request) *mcp.CallToolResult {
	return result(Sentence(r), r)
}

// Sentence says in one line where the request stands, naming it by its key:
// "request wa_…: approved by U024BE7LH, executed: obj_1".
func Sentence(r *client.Request) string {
	var s string
	switch r.Status {
	case client.StatusPending:
		s = fmt.Sprintf("pending review, %d of %d approvals", approvals(r.Votes), max(r.Policy.Approvals, 1))
	case client.StatusRejected:
		if rule, ok := byPolicy(r); ok {
			s = "denied by policy rule " + strconv.Quote(rule)
			if reason := strings.TrimSuffix(r.Decision.Reason, "."); reason != "" {
				s += ": " + reason
			}
			s += "; nothing was written, and the same write would be denied again"
			break
		}
		s = "rejected" + decidedBy(r)
		if r.Decision != nil && r.Decision.Reason != "" {
			s += ": " + strings.TrimSuffix(r.Decision.Reason, ".")
		}
		s += "; " + retryRejected
	case client.StatusExpired:
		s = "expired before anyone decided; nothing was written"
	case client.StatusCancelled:
		s = "cancelled; nothing was written"
	case client.StatusEdited:
		s = "edited by a reviewer, who changed the effect: this request will never be written; " +
			"the write that replaces it is request " + r.SupersededBy +
			" (call wait_for_outcome with ref " + r.SupersededBy + " for its outcome)"
	case client.StatusApproved:
		if r.AwaitsOutcome() {
			s = "approved" + decidedBy(r) + performYourself(r)
			break
		}
		s = "approved" + decidedBy(r) + execution(r.Execution)
	default:
		s = string(r.Status)
	}
	s = "request " + r.Key + ": " + s
	if r.Replayed {
		s += " (this write was already requested: the same request, nothing new stored)"
	}
	return s
}

// retryRejected is what a person's reject means for the model's next call:
// the same intent is answered with the same rejection, and only a new step
// asks again.
const retryRejected = "nothing was written. Requesting the same write again (same run_id, step, tool and effect) " +
	"returns this rejection and asks nobody; to ask again, change what was refused and request it with a new step"

// decidedBy names who decided: a person, the policy's rule, or a standing
// grant.
func decidedBy(r *client.Request) string {
	if r.Decision == nil || r.Decision.By == "" {
		return ""
	}
	if rule, ok := byPolicy(r); ok {
		return " by policy rule " + strconv.Quote(rule) + " (no review needed)"
	}
	if grant, ok := strings.CutPrefix(r.Decision.By, "grant:"); ok && r.Decision.Via == client.ViaGrant {
		return " by a reviewer's standing grant " + grant + " (no review needed)"
	}
	return " by " + r.Decision.By
}

// byPolicy returns the rule of a decision the tool's policy made.
func byPolicy(r *client.Request) (rule string, ok bool) {
	if r.Decision == nil || r.Decision.Via != client.ViaPolicy {
		return "", false
	}
	return strings.CutPrefix(r.Decision.By, "policy:")
}

// performYourself is what a model must do with an approved write of an
// agent-executed tool: countersign does not send it, the agent does, once,
// with the key and the receipt, and then says how it went.
func performYourself(r *client.Request) string {
	s := "; countersign does not send this write: perform it yourself now, exactly the approved effect, once, " +
		"with the headers Idempotency-Key: " + r.Key + " and Countersign-Receipt: <the receipt field of this result>, " +
		"then call report_outcome with ref " + r.Key + " and status succeeded or failed"
	if r.Execution != nil && r.Execution.State == client.ExecNeedsReview {
		s += " (its outcome is overdue: a person has been asked to look; report it now)"
	}
	return s
}

// execution says how an approved request's write is going.
func execution(e *client.Execution) string {
	if e == nil {
		return ", about to be executed"
	}
	switch e.State {
	case client.ExecReady, client.ExecClaimed:
		return fmt.Sprintf(", executing (attempt %d)", max(e.Attempts, 1))
	case client.ExecSucceeded:
		if e.ProviderRef != "" {
			return ", executed: " + e.ProviderRef
		}
		return ", executed"
	case client.ExecFailed:
		if e.Code != "" {
			return ", but the write failed (" + e.Code + ")"
		}
		return ", but the write failed"
	case client.ExecUnknown:
		return "; whether the write happened is not known yet and is being verified"
	case client.ExecNeedsReview:
		return "; the write needs a person's review before it can finish"
	case client.ExecSuperseded:
		return "; that approval was superseded"
	}
	return ", execution " + string(e.State)
}

func approvals(votes []client.Vote) int {
	n := 0
	for _, v := range votes {
		if v.Verdict == "approve" {
			n++
		}
	}
	return n
}

// codeUnreachable is the tool error's code when countersign did not answer
// within the call's time. It is the MCP server's own: the API never sends it.
const codeUnreachable = "unreachable"

// toolError is the tool result of a call countersign refused or did not
// answer: isError, the sentence naming the code, the envelope as structured
// content.
func toolError(err error) *mcp.CallToolResult {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.Code != "" && apiErr.Code != "unavailable" {
		d := wire.Error{Code: apiErr.Code, Message: apiErr.Message, Field: apiErr.Field, Errors: apiErr.Errors, RequestID: apiErr.RequestID,
			Status: apiErr.FinalStatus, Tools: apiErr.Tools, Key: apiErr.Key, Tier: apiErr.Tier}
		if errors.Is(err, client.ErrDeniedByPolicy) {
			return errorResult(deniedText(apiErr), d)
		}
		text := "countersign refused: " + apiErr.Code
		if apiErr.Field != "" {
			text += " at " + apiErr.Field
		}
		text += ": " + apiErr.Message
		for _, v := range apiErr.Errors[min(1, len(apiErr.Errors)):] {
			text += "; " + v.Field + ": " + v.Message
		}
		if apiErr.RequestID != "" {
			text += " (request_id " + apiErr.RequestID + ")"
		}
		return errorResult(text, d)
	}
	// A network error, a 503 or a page without the API's envelope, retried
	// until the call's time ran out.
	d := wire.Error{Code: codeUnreachable, Message: strings.TrimPrefix(err.Error(), "countersign: ")}
	text := "countersign did not answer in time (" + codeUnreachable + "): " + d.Message +
		". Calling again with the same arguments is safe."
	return errorResult(text, d)
}

// deniedText is what a model reads of a write the tool's policy refuses:
// the rule and its words, and that only another write can get further, so
// that it neither retries as is nor waits for a review that will not come.
func deniedText(e *client.APIError) string {
	text := "countersign denied this write by policy rule " + strconv.Quote(e.Tier) + " (denied_by_policy): " + e.Message +
		" Asking again with the same fields gets the same answer; only a different write, or a person changing the policy, can proceed."
	if e.Key != "" {
		text += " The denial is recorded as request " + e.Key + "."
	}
	if e.RequestID != "" {
		text += " (request_id " + e.RequestID + ")"
	}
	return text
}

// argumentError is the tool error of arguments refused before anything is
// sent, named as the API names a body value at fault.
func argumentError(field, message string) *mcp.CallToolResult {
	return errorResult("invalid arguments (invalid_request) at "+field+": "+message,
		wire.Error{Code: "invalid_request", Message: message, Field: field})
}

func errorResult(text string, d wire.Error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: wire.ErrorBody{Error: d}}
}

// decodeArgs decodes a tool's arguments into args, refusing a member args
// does not have and a value of the wrong type; nil when they decode.
func decodeArgs(raw json.RawMessage, args any) *mcp.CallToolResult {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(args)
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := "/" + strings.ReplaceAll(typeErr.Field, ".", "/")
		return argumentError(field, fmt.Sprintf("must be %s, not %s", jsonType(typeErr.Type.Kind().String()), typeErr.Value))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return argumentError("/"+name, "this tool takes no argument "+name)
	}
	return argumentError("", "the arguments are not a JSON object: "+err.Error())
}

// jsonType names a Go kind as JSON does.
func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64":
		return "an integer"
	}
	return "a " + kind
}
