package approvals

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/store"
)

// Refusal is countersign saying no: a stable machine code and a sentence
// for a human. Every surface shows the same code and the same words: the
// hook as its JSON error body (with the HTTP status hook.Status gives the
// code), Slack as the clicker's ephemeral answer (people as mentions), the
// inbox as the page's notice.
type Refusal struct {
	Code    string
	Message string
	// Field is the JSON pointer of the request value at fault (/run_id,
	// /effect/…); a header or a query parameter is named as itself.
	Field string
	// Errors lists every value at fault when there are several
	// (invalid_effect); Field and Message are the first.
	Errors []Violation
	// By is the user id Message names, if any, so that a surface which
	// renders people (Slack) can show it as one.
	By string
	// Status is, for pruned, how the key's request ended.
	Status string
	// Tools are, for unknown_tool, the tools the agent may use.
	Tools []string
	// Key and Tier are, for denied_by_policy, the request's key and the
	// rule that denied it.
	Key  string
	Tier string
}

// RefusalCodes lists every code a Refusal carries, in the order the docs
// list them.
func RefusalCodes() []string {
	return []string{
		CodeMalformedJSON, CodeInvalidRequest, CodeInvalidEffect, CodeUnknownTool, CodeKeyReused, CodePruned, CodeUnauthorized, CodeTooLarge,
		CodeNotFound, CodeAlreadyDecided, CodeStaleCard, CodeNotApprover, CodeNoLongerApprover, CodeSelfApproval,
		CodeAlreadyResolved, CodeNoCallback, CodeNoDelivery, CodeUnavailable, CodeInternal, CodeMethodNotAllowed, CodeUnsupportedMediaType, CodeDeniedByPolicy,
		CodeOutcomeConflict, CodeNotAgentExecuted,
	}
}

// fixed are the refusals whose words carry no detail, by code.
var fixed = map[string]Refusal{
	CodeUnauthorized: {Code: CodeUnauthorized,
		Message: "A valid agent bearer token is required."},
	CodeTooLarge: {Code: CodeTooLarge,
		Message: "The body is larger than 1 MiB."},
	CodeNotFound: {Code: CodeNotFound,
		Message: "No request has that id or key."},
	CodeStaleCard: {Code: CodeStaleCard,
		Message: "This card is stale: the request has a newer round or a different payload since it was shown. Nothing was recorded; decide on the newest card."},
	CodeNotApprover: {Code: CodeNotApprover,
		Message: "You are not an approver for this tool. Nothing was recorded; the attempt was audited."},
	CodeNoLongerApprover: {Code: CodeNoLongerApprover,
		Message: "You are no longer an approver for this tool: the configuration in force does not list you, although this request did when it arrived. Nothing was recorded; the attempt was audited."},
	CodeSelfApproval: {Code: CodeSelfApproval,
		Message: "This request was made for you, so someone else has to approve it. Nothing was recorded; the attempt was audited."},
	CodeAlreadyResolved: {Code: CodeAlreadyResolved,
		Message: "This write was already resolved. Nothing changed."},
	CodeNoCallback: {Code: CodeNoCallback,
		Message: "The request's agent has no callback configured, so there is nothing to send. Nothing changed."},
	CodeNoDelivery: {Code: CodeNoDelivery,
		Message: "This request has not settled or needed review yet, so no callback was sent to redrive. Nothing changed."},
	CodeUnavailable: {Code: CodeUnavailable,
		Message: "countersign cannot reach its database right now; try again in a moment."},
	CodeInternal: {Code: CodeInternal,
		Message: "countersign could not complete this just now. Nothing was recorded by this attempt; it is safe to try again."},
}

// RefusalFor maps an error of this package's service (or of the store
// beneath it) to its refusal. An error it does not know is internal: its
// text stays in the log, never in the answer.
func RefusalFor(err error) Refusal {
	var (
		input       *InputError
		unknownTool *UnknownToolError
		notPending  *NotPendingError
		prunedKey   *PrunedError
		denied      *DeniedError
	)
	switch {
	case errors.As(err, &input):
		return Refusal{Code: input.Code, Message: input.Message, Field: input.Field, Errors: input.Errors}
	case errors.Is(err, ErrUnauthorized):
		return fixed[CodeUnauthorized]
	case errors.Is(err, ErrTooLarge):
		return fixed[CodeTooLarge]
	case store.IsUnavailable(err):
		return fixed[CodeUnavailable]
	case errors.As(err, &prunedKey):
		return Refusal{Code: CodePruned, Status: prunedKey.Status,
			Message: "This key's request settled as " + prunedKey.Status + " on " + prunedKey.SettledAt.UTC().Format(time.DateOnly) +
				" and was pruned under the retention policy; the key will not run again. Send a new key for a new write."}
	case errors.As(err, &denied):
		return Refusal{Code: CodeDeniedByPolicy, Key: denied.Key, Tier: denied.Tier,
			Message: "Denied by policy (rule " + strconv.Quote(denied.Tier) + "): " + denied.Message +
				" Nothing will be sent; posting the same intent again gets the same answer."}
	case errors.Is(err, ErrKeyTaken):
		return Refusal{Code: CodeKeyReused,
			Message: "This key already names a request of another agent; send a different key."}
	case errors.Is(err, ErrKeyReused):
		return Refusal{Code: CodeKeyReused,
			Message: "This key already names a request with different run, step, tool or effect fields."}
	case errors.As(err, &unknownTool):
		return Refusal{Code: CodeUnknownTool, Message: unknownTool.message(), Tools: unknownTool.Available}
	case errors.Is(err, ErrUnknownTool):
		return Refusal{Code: CodeUnknownTool, Message: "The tool is not configured."}
	case errors.Is(err, ErrNotFound):
		return fixed[CodeNotFound]
	case errors.As(err, &notPending):
		return notPending.refusal()
	case errors.Is(err, ErrStaleCard):
		return fixed[CodeStaleCard]
	case errors.Is(err, ErrOwnerApproval):
		r := fixed[CodeSelfApproval]
		r.Message = "You own the agent that asked for this, so someone else has to approve it. Nothing was recorded; the attempt was audited."
		return r
	case errors.Is(err, ErrSelfApproval):
		return fixed[CodeSelfApproval]
	case errors.Is(err, ErrNoLongerApprover):
		return fixed[CodeNoLongerApprover]
	case errors.Is(err, ErrNotAllowed):
		return fixed[CodeNotApprover]
	case errors.Is(err, ErrAlreadyResolved):
		return fixed[CodeAlreadyResolved]
	case errors.Is(err, ErrNoCallback):
		return fixed[CodeNoCallback]
	case errors.Is(err, ErrNoDelivery):
		return fixed[CodeNoDelivery]
	case errors.Is(err, ErrOutcomeConflict):
		return Refusal{Code: CodeOutcomeConflict,
			Message: "This request already has another outcome; an outcome is reported once. Nothing changed."}
	case errors.Is(err, ErrNotAgentExecuted):
		return Refusal{Code: CodeNotAgentExecuted,
			Message: "This request awaits no outcome from its agent: its tool is not execute: agent, or it was not approved. Nothing changed."}
	}
	return fixed[CodeInternal]
}

// RefusalByCode returns the refusal a code stands for when its words need no
// detail (not already_decided, which names a decision, nor the intake codes
// whose words name a field or a tool). A surface that carries only the code,
// such as the inbox across a redirect, shows the words from here.
func RefusalByCode(code string) (Refusal, bool) {
	r, ok := fixed[code]
	return r, ok
}

// refusal words a request that is no longer pending: the decision that
// stands (who and when), or the status it left pending for.
func (e *NotPendingError) refusal() Refusal {
	r := Refusal{Code: CodeAlreadyDecided}
	if d := e.Decision; d != nil {
		r.By = d.DecidedBy
		r.Message = fmt.Sprintf("Already %s by %s at %s.", past(d.Verdict), d.DecidedBy, d.DecidedAt.UTC().Format("2006-01-02 15:04 UTC"))
		return r
	}
	r.Message = fmt.Sprintf("This request is %s, so it can no longer be decided or cancelled. Nothing changed.", e.Status)
	return r
}

// past is a verdict as a past participle: "approved", "rejected".
func past(v store.Verdict) string {
	if v == store.VerdictReject {
		return "rejected"
	}
	return "approved"
}

// toolsNamed is how many tool names an unknown_tool message lists; the
// refusal's Tools (and GET /v1/tools) have them all.
const toolsNamed = 20

// message names the tool asked for and the tools the agent may use.
func (e *UnknownToolError) message() string {
	msg := "Tool " + strconv.Quote(e.Tool) + " is not configured."
	switch n := len(e.Available); {
	case n == 0:
		return msg + " No tool is configured."
	case n <= toolsNamed:
		return msg + " Tools this agent may use: " + strings.Join(e.Available, ", ") + "."
	default:
		return msg + fmt.Sprintf(" Tools this agent may use: %s, and %d more (GET /v1/tools lists them all).",
			strings.Join(e.Available[:toolsNamed], ", "), n-toolsNamed)
	}
}
