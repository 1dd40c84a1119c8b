package hook

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/countersign/countersign/approvals"
)

// maxOutcomeBody is the largest outcome report read.
const maxOutcomeBody = 16 << 10

// outcome records the outcome of a write the agent performed itself (an
// execute: agent tool) and answers the request's representation: the same
// report twice is one, another is 409 outcome_conflict.
func (h *Handler) outcome(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	if !isJSON(r.Header.Get("Content-Type")) {
		return writeRefusal(w, r, unsupportedMediaType)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxOutcomeBody))
	if err != nil {
		return writeRefusal(w, r, approvals.RefusalFor(approvals.ErrTooLarge))
	}
	var out approvals.OutcomeReport
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return writeRefusal(w, r, approvals.RefusalFor(&approvals.InputError{Code: approvals.CodeMalformedJSON,
			Message: "The body must be one JSON object: {\"status\": \"succeeded\" or \"failed\", \"provider_ref\", \"detail\"}."}))
	}
	req, err := h.svc.ReportOutcome(r.Context(), agent, r.PathValue("ref"), out)
	return h.answerView(w, r, req, err)
}
