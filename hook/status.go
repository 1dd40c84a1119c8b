package hook

import (
	"net/http"

	"github.com/countersign/countersign/approvals"
)

// statuses are the HTTP statuses of the refusal codes (DECISIONS.md,
// "Refusals: one vocabulary"). The codes and their words are approvals';
// the status is how HTTP says each.
var statuses = map[string]int{
	approvals.CodeMalformedJSON:    http.StatusBadRequest,
	approvals.CodeInvalidRequest:   http.StatusUnprocessableEntity,
	approvals.CodeInvalidEffect:    http.StatusUnprocessableEntity,
	approvals.CodeUnknownTool:      http.StatusUnprocessableEntity,
	approvals.CodeKeyReused:        http.StatusConflict,
	approvals.CodePruned:           http.StatusGone,
	approvals.CodeUnauthorized:     http.StatusUnauthorized,
	approvals.CodeTooLarge:         http.StatusRequestEntityTooLarge,
	approvals.CodeNotFound:         http.StatusNotFound,
	approvals.CodeAlreadyDecided:   http.StatusConflict,
	approvals.CodeStaleCard:        http.StatusConflict,
	approvals.CodeNotApprover:      http.StatusForbidden,
	approvals.CodeNoLongerApprover: http.StatusForbidden,
	approvals.CodeSelfApproval:     http.StatusForbidden,
	approvals.CodeDeniedByPolicy:   http.StatusForbidden,
	approvals.CodeAlreadyResolved:  http.StatusConflict,
	approvals.CodeNoCallback:       http.StatusConflict,
	approvals.CodeNoDelivery:       http.StatusConflict,
	approvals.CodeOutcomeConflict:  http.StatusConflict,
	approvals.CodeNotAgentExecuted: http.StatusConflict,
	approvals.CodeUnavailable:      http.StatusServiceUnavailable,
	approvals.CodeInternal:         http.StatusInternalServerError,

	approvals.CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	approvals.CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
}

// Status is the HTTP status a refusal with code is answered with: the
// hook's, and the inbox's for its error pages. A code it does not know is
// a 500.
func Status(code string) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}
