package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/internal/strictjson"
	"github.com/countersign/countersign/mcpserver"
)

// mcpCall is a POST to /mcp that passed admitMCP: its body, read whole,
// and whether it opens a session.
type mcpCall struct {
	body       []byte
	initialize bool
}

// admitMCP refuses what /mcp does not serve, as the agent API refuses it
// (its envelope, its codes): another agent's session (403 unauthorized)
// or one that is unknown or ended (404 not_found), a method other than
// POST and DELETE (405), a body not sent as UTF-8 application/json (415),
// an Accept without application/json and text/event-stream (422 naming
// Accept), a body over mcpMaxBody (413), one that is not JSON (400
// malformed_json), and a message that is neither a JSON-RPC request nor a
// response (422 naming the member). DELETE ends a session: nothing is kept,
// so it is answered 204. ok is false when the request was answered.
func (a *app) admitMCP(w http.ResponseWriter, r *http.Request, agent approvals.Agent, ids *mcpserver.SessionIDs) (call mcpCall, ok bool) {
	refuse := func(code, field, message string) (mcpCall, bool) {
		hook.Refuse(w, r, hook.Status(code), approvals.Refusal{Code: code, Field: field, Message: message})
		return mcpCall{}, false
	}
	if id := r.Header.Get(mcpSessionHeader); id != "" {
		switch err := ids.Check(id, agent.Name, time.Now()); {
		case errors.Is(err, mcpserver.ErrSessionOfAnotherAgent):
			// The token is valid, not for this session: the API's code,
			// with the status that says so.
			hook.Refuse(w, r, http.StatusForbidden, approvals.Refusal{Code: approvals.CodeUnauthorized, Field: mcpSessionHeader,
				Message: "This MCP session was opened by another agent; send initialize without Mcp-Session-Id to open your own."})
			return mcpCall{}, false
		case err != nil:
			return refuse(approvals.CodeNotFound, mcpSessionHeader, fmt.Sprintf(
				"No MCP session has this id, or it ended (a session lasts %s from its initialize); send initialize without Mcp-Session-Id to open a new one.",
				mcpserver.SessionLifetime))
		}
	}
	switch r.Method {
	case http.MethodPost:
	case http.MethodDelete:
		if r.Header.Get(mcpSessionHeader) == "" {
			return refuse(approvals.CodeInvalidRequest, mcpSessionHeader, "DELETE ends a session: name it in Mcp-Session-Id.")
		}
		w.WriteHeader(http.StatusNoContent) // nothing is kept for a session
		return mcpCall{}, false
	default:
		w.Header().Set("Allow", "DELETE, POST")
		return refuse(approvals.CodeMethodNotAllowed, "", "/mcp does not take "+r.Method+"; it takes POST (and DELETE to end a session). Nothing changed.")
	}
	if !isUTF8JSON(r.Header.Get("Content-Type")) {
		return refuse(approvals.CodeUnsupportedMediaType, "", "The body must be sent as Content-Type: application/json, in UTF-8 (charset utf-8 or none). Nothing was stored.")
	}
	if !acceptsMCP(r.Header.Values("Accept")) {
		return refuse(approvals.CodeInvalidRequest, "Accept", "Accept must name both application/json and text/event-stream: an answer comes as either.")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcpMaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return refuse(approvals.CodeTooLarge, "", fmt.Sprintf("The body is larger than %d bytes.", mcpMaxBody))
		}
		return refuse(approvals.CodeMalformedJSON, "", "the body could not be read: "+err.Error())
	}
	var bad *strictjson.Error
	if errors.As(strictjson.Check(body), &bad) {
		if bad.Malformed {
			return refuse(approvals.CodeMalformedJSON, "", bad.Message)
		}
		return refuse(approvals.CodeInvalidRequest, bad.Path, bad.Message)
	}
	initialize, field, message := readJSONRPC(body)
	if message != "" {
		return refuse(approvals.CodeInvalidRequest, field, message)
	}
	return mcpCall{body: body, initialize: initialize}, true
}

// isUTF8JSON reports whether a Content-Type names application/json in
// UTF-8: no charset, or utf-8 (JSON is UTF-8; RFC 8259).
func isUTF8JSON(contentType string) bool {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil || mediaType != "application/json" {
		return false
	}
	charset, ok := params["charset"]
	return !ok || strings.EqualFold(charset, "utf-8")
}

// acceptsMCP reports whether an Accept takes both of the answers
// streamable HTTP gives: application/json and text/event-stream (or
// ranges that hold them).
func acceptsMCP(values []string) bool {
	var json, stream bool
	for _, value := range values {
		for _, token := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(token, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				json = true
			case "text/event-stream", "text/*":
				stream = true
			case "*/*":
				json, stream = true, true
			}
		}
	}
	return json && stream
}

// readJSONRPC checks that body, well-formed JSON, is a JSON-RPC message or
// a batch of them: each an object that is a request or notification (a
// method, a string) or a response (an id, and a result or an error). A
// message with an id and neither is an invalid request, not something to
// accept and drop. It reports whether an initialize is among them, or the
// JSON pointer of the member at fault and why.
func readJSONRPC(body []byte) (initialize bool, field, message string) {
	var messages []json.RawMessage
	batch := bytes.HasPrefix(bytes.TrimSpace(body), []byte("["))
	if batch {
		if json.Unmarshal(body, &messages) != nil || len(messages) == 0 {
			return false, "", "a batch must be an array of JSON-RPC messages, at least one"
		}
	} else {
		messages = []json.RawMessage{body}
	}
	for i, raw := range messages {
		prefix := ""
		if batch {
			prefix = fmt.Sprintf("/%d", i)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return false, prefix, "a JSON-RPC message must be an object"
		}
		if method, ok := m["method"]; ok {
			var name string
			if json.Unmarshal(method, &name) != nil {
				return false, prefix + "/method", "method must be a string"
			}
			initialize = initialize || name == "initialize"
			continue
		}
		_, hasID := m["id"]
		_, hasResult := m["result"]
		_, hasError := m["error"]
		if !hasID || hasResult == hasError {
			return false, prefix + "/method", "a JSON-RPC message needs a method (a request or a notification), or an id with a result or an error (a response); this one is neither"
		}
	}
	return initialize, "", ""
}

// refuseMCPServer answers a request whose server could not be built: the
// agent's tools could not be listed. The API's refusal when it refused;
// else countersign is out of reach for now.
func refuseMCPServer(w http.ResponseWriter, r *http.Request, err error) {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.Code != "" {
		hook.Refuse(w, r, hook.Status(apiErr.Code), approvals.Refusal{Code: apiErr.Code, Message: apiErr.Message})
		return
	}
	w.Header().Set("Retry-After", "1")
	hook.Refuse(w, r, http.StatusServiceUnavailable, approvals.Refusal{Code: approvals.CodeUnavailable,
		Message: "countersign could not list the agent's tools just now; try again in a moment."})
}

// sdkRefusals turns a refusal the MCP SDK words in plain text (http.Error)
// into the API's envelope, so that no answer of /mcp is a page a client
// cannot read. Everything else passes through as the SDK writes it,
// streamed.
type sdkRefusals struct {
	http.ResponseWriter
	status  int
	message bytes.Buffer
}

func (s *sdkRefusals) WriteHeader(status int) {
	if s.status != 0 {
		return
	}
	if status >= 400 && strings.HasPrefix(s.Header().Get("Content-Type"), "text/plain") {
		s.status = status
		return
	}
	s.status = -1 // passed through
	s.ResponseWriter.WriteHeader(status)
}

func (s *sdkRefusals) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.WriteHeader(http.StatusOK)
	}
	if s.status > 0 {
		return s.message.Write(b)
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush the SDK's stream.
func (s *sdkRefusals) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// sdkCodes are the refusal codes of the statuses the SDK answers in plain
// text; any other is internal.
var sdkCodes = map[int]string{
	http.StatusBadRequest:            approvals.CodeInvalidRequest,
	http.StatusNotFound:              approvals.CodeNotFound,
	http.StatusMethodNotAllowed:      approvals.CodeMethodNotAllowed,
	http.StatusRequestEntityTooLarge: approvals.CodeTooLarge,
	http.StatusUnsupportedMediaType:  approvals.CodeUnsupportedMediaType,
}

// finish writes the envelope of a refusal the SDK wrote in plain text.
func (s *sdkRefusals) finish(r *http.Request) {
	if s.status <= 0 {
		return
	}
	code, ok := sdkCodes[s.status]
	if !ok {
		code = approvals.CodeInternal
	}
	s.Header().Del("Content-Type")
	s.Header().Del("X-Content-Type-Options")
	hook.Refuse(s.ResponseWriter, r, hook.Status(code), approvals.Refusal{Code: code, Message: "MCP: " + strings.TrimSpace(s.message.String())})
}
