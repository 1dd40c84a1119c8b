package approvals

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/countersign/countersign/store"
)

// Refusal is countersign saying no: a stable machine code, the HTTP status
// the agent hook answers with, and a sentence for a human. Every surface
// shows the same code and the same words: the hook as its JSON error body,
// Slack as the clicker's ephemeral answer (people as mentions), the inbox as
// the page's notice.
type Refusal struct {
	Code    string
	Status  int
	Message string
	// Field names the request field at fault, for invalid_request.
	Field string
	// By is the user id Message names, if any, so that a surface which
	// renders people (Slack) can show it as one.
	By string
}

// RefusalCodes lists every code a Refusal carries, in the order the docs
// list them.
func RefusalCodes() []string {
	return []string{
		CodeMalformedJSON, CodeInvalidRequest, CodeUnknownTool, CodeKeyReused, CodeUnauthorized, CodeTooLarge,
		CodeNotFound, CodeAlreadyDecided, CodeStaleCard, CodeNotApprover, CodeSelfApproval, CodeAlreadyResolved,
		CodeUnavailable, CodeInternal,
	}
}

// The words of refusals that carry no detail.
const (
	msgUnauthorized    = "A valid agent bearer token is required."
	msgTooLarge        = "The body is larger than 1 MiB."
	msgKeyTaken        = "This key already names a request of another agent; send a different key."
	msgKeyReused       = "This key already names a request with different run, step, tool or effect fields."
	msgNotFound        = "No request has that id or key."
	msgStaleCard       = "This card is stale: the request has a newer round or a different payload since it was shown. Nothing was recorded; decide on the newest card."
	msgNotApprover     = "You are not an approver for this tool. Nothing was recorded; the attempt was audited."
	msgSelfApproval    = "This request was made for you, so someone else has to approve it. Nothing was recorded; the attempt was audited."
	msgAlreadyResolved = "This write was already resolved. Nothing changed."
	msgUnavailable     = "countersign cannot reach its database right now; try again in a moment."
	msgInternal        = "countersign could not complete this just now. Nothing was recorded by this attempt; it is safe to try again."
)

// RefusalFor maps an error of this package's service (or of the store
// beneath it) to its refusal. An error it does not know is internal: its
// text stays in the log, never in the answer.
func RefusalFor(err error) Refusal {
	var (
		input       *InputError
		unknownTool *UnknownToolError
		notPending  *NotPendingError
		maxBytes    *http.MaxBytesError
	)
	switch {
	case errors.As(err, &input):
		status := http.StatusUnprocessableEntity
		if input.Code == CodeMalformedJSON {
			status = http.StatusBadRequest
		}
		return Refusal{Code: input.Code, Status: status, Message: input.Message, Field: input.Field}
	case errors.Is(err, ErrUnauthorized):
		return Refusal{Code: CodeUnauthorized, Status: http.StatusUnauthorized, Message: msgUnauthorized}
	case errors.Is(err, ErrTooLarge), errors.As(err, &maxBytes):
		return Refusal{Code: CodeTooLarge, Status: http.StatusRequestEntityTooLarge, Message: msgTooLarge}
	case store.IsUnavailable(err):
		return Refusal{Code: CodeUnavailable, Status: http.StatusServiceUnavailable, Message: msgUnavailable}
	case errors.Is(err, ErrKeyTaken):
		return Refusal{Code: CodeKeyReused, Status: http.StatusConflict, Message: msgKeyTaken}
	case errors.Is(err, ErrKeyReused):
		return Refusal{Code: CodeKeyReused, Status: http.StatusConflict, Message: msgKeyReused}
	case errors.As(err, &unknownTool):
		return Refusal{Code: CodeUnknownTool, Status: http.StatusUnprocessableEntity,
			Message: "Tool " + strconv.Quote(unknownTool.Tool) + " is not configured."}
	case errors.Is(err, ErrUnknownTool):
		return Refusal{Code: CodeUnknownTool, Status: http.StatusUnprocessableEntity, Message: "The tool is not configured."}
	case errors.Is(err, ErrNotFound):
		return Refusal{Code: CodeNotFound, Status: http.StatusNotFound, Message: msgNotFound}
	case errors.As(err, &notPending):
		return notPending.refusal()
	case errors.Is(err, ErrStaleCard):
		return Refusal{Code: CodeStaleCard, Status: http.StatusConflict, Message: msgStaleCard}
	case errors.Is(err, ErrSelfApproval):
		return Refusal{Code: CodeSelfApproval, Status: http.StatusForbidden, Message: msgSelfApproval}
	case errors.Is(err, ErrNotAllowed):
		return Refusal{Code: CodeNotApprover, Status: http.StatusForbidden, Message: msgNotApprover}
	case errors.Is(err, ErrAlreadyResolved):
		return Refusal{Code: CodeAlreadyResolved, Status: http.StatusConflict, Message: msgAlreadyResolved}
	}
	return Refusal{Code: CodeInternal, Status: http.StatusInternalServerError, Message: msgInternal}
}

// RefusalByCode returns the refusal a code stands for when its words need no
// detail (not already_decided, which names a decision, nor the intake codes
// whose words name a field or a tool). A surface that carries only the code,
// such as the inbox across a redirect, shows the words from here.
func RefusalByCode(code string) (Refusal, bool) {
	var err error
	switch code {
	case CodeUnauthorized:
		err = ErrUnauthorized
	case CodeTooLarge:
		err = ErrTooLarge
	case CodeNotFound:
		err = ErrNotFound
	case CodeStaleCard:
		err = ErrStaleCard
	case CodeNotApprover:
		err = ErrNotAllowed
	case CodeSelfApproval:
		err = ErrSelfApproval
	case CodeAlreadyResolved:
		err = ErrAlreadyResolved
	case CodeUnavailable:
		err = store.ErrUnavailable
	case CodeInternal:
		err = errors.New("internal")
	default:
		return Refusal{}, false
	}
	return RefusalFor(err), true
}

// refusal words a request that is no longer pending: the decision that
// stands (who and when), or the status it left pending for.
func (e *NotPendingError) refusal() Refusal {
	r := Refusal{Code: CodeAlreadyDecided, Status: http.StatusConflict}
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
