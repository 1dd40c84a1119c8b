package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/countersign/countersign/approvals"
)

// writeServiceError answers an error with its refusal: a store out of reach
// adds Retry-After, and anything unknown is a 500 that reveals nothing but
// is logged. A client that went away gets nothing.
func (h *Handler) writeServiceError(w http.ResponseWriter, r *http.Request, err error) int {
	if errors.Is(err, context.Canceled) {
		return 499
	}
	ref := approvals.RefusalFor(err)
	switch ref.Code {
	case approvals.CodeUnavailable:
		h.logger.WarnContext(r.Context(), "hook request failed: database unavailable", slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		w.Header().Set("Retry-After", strconv.Itoa(int(approvals.RetryAfter/time.Second)))
	case approvals.CodeInternal:
		h.logger.ErrorContext(r.Context(), "hook request failed", slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	}
	return writeRefusal(w, r, ref)
}

// invalid is an invalid_request naming field: a header or a query
// parameter as itself, a body member by its JSON pointer.
func invalid(field, format string, args ...any) *approvals.InputError {
	return &approvals.InputError{Code: approvals.CodeInvalidRequest, Field: field, Message: fmt.Sprintf(format, args...)}
}

// unsupportedMediaType refuses a body that is not sent as JSON.
var unsupportedMediaType = approvals.Refusal{Code: approvals.CodeUnsupportedMediaType,
	Message: "The body must be sent as Content-Type: application/json."}

// isJSON reports whether a Content-Type names application/json (with any
// parameters, such as charset).
func isJSON(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && mediaType == "application/json"
}

// writeRefusal writes a refusal as the error envelope, with its code's
// status and the request's id.
func writeRefusal(w http.ResponseWriter, r *http.Request, ref approvals.Refusal) int {
	status := Status(ref.Code)
	Refuse(w, r, status, ref)
	return status
}

func writeJSON(w http.ResponseWriter, status int, v any) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return status
}
