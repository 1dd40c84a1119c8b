package hook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/wire"
)

// A coding agent's permission hooks (docs/HOOKS.md): Claude Code posts the
// input of its PreToolUse hook before a tool runs and is answered allow,
// deny or ask after countersign's policy and, when a person is asked, after
// their decision or when the wait ends; its PostToolUse hook reports how
// the tool went. The tool runs in the agent, as for any execute: agent tool.

// The permission decisions a PreToolUse hook answers.
const (
	PermissionAllow = "allow"
	PermissionDeny  = "deny"
	PermissionAsk   = "ask"
)

// DefaultToolHookWait is how long a PreToolUse call waits for a person by
// default: below Claude Code's hook timeout, which the settings snippet
// sets to 60 seconds.
const DefaultToolHookWait = 50 * time.Second

// maxPostToolUseBody bounds a PostToolUse input: the tool's input (an
// intent's effect, at most approvals.MaxBodyBytes) and its response.
const maxPostToolUseBody = 4 * approvals.MaxBodyBytes

// maxFailureDetail is how much of a failed tool's error is kept as the
// outcome's detail.
const maxFailureDetail = 1000

// ToolHooks says how the permission hooks map a coding agent's tools
// (configuration: pretooluse).
type ToolHooks struct {
	// Wait is how long a call that asks a person waits for a decision
	// before it answers ask; 0 is DefaultToolHookWait, at most MaxWait.
	Wait time.Duration
	// Tools maps the agent's tool names, exactly or by a glob (path.Match:
	// "mcp__*"), to countersign tools, which are execute: agent.
	Tools map[string]string
	// Unmapped is what a tool with no mapping is answered: ask (the
	// default), allow or deny.
	Unmapped string
}

// SetToolHooks replaces how the permission hooks map tools, at start and
// on a configuration reload.
func (h *Handler) SetToolHooks(c ToolHooks) { h.toolHooks.Store(&c) }

// currentToolHooks returns the mapping in force, with its defaults.
func (h *Handler) currentToolHooks() ToolHooks {
	var c ToolHooks
	if p := h.toolHooks.Load(); p != nil {
		c = *p
	}
	if c.Wait <= 0 {
		c.Wait = DefaultToolHookWait
	}
	c.Wait = min(c.Wait, MaxWait)
	if c.Unmapped == "" {
		c.Unmapped = PermissionAsk
	}
	return c
}

// ToolFor returns the countersign tool the agent's tool name maps to: the
// exact name's mapping, else the longest glob that matches (the first in
// byte order among equally long ones).
func (c ToolHooks) ToolFor(name string) (string, bool) {
	if tool, ok := c.Tools[name]; ok {
		return tool, true
	}
	var best string
	for pattern := range c.Tools {
		if !IsToolGlob(pattern) {
			continue
		}
		if ok, err := path.Match(pattern, name); err != nil || !ok {
			continue
		}
		if best == "" || len(pattern) > len(best) || (len(pattern) == len(best) && pattern < best) {
			best = pattern
		}
	}
	if best == "" {
		return "", false
	}
	return c.Tools[best], true
}

// IsToolGlob reports whether a mapped name is a glob rather than a name.
func IsToolGlob(pattern string) bool { return strings.ContainsAny(pattern, "*?[\\") }

// toolUseInput is the JSON a Claude Code tool hook sends on its command's
// stdin. Fields Claude Code adds later are ignored.
type toolUseInput struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	// ToolResponse is PostToolUse's; Error and IsInterrupt
	// PostToolUseFailure's.
	ToolResponse json.RawMessage `json:"tool_response"`
	Error        json.RawMessage `json:"error"`
	IsInterrupt  bool            `json:"is_interrupt"`
}

// preToolUseAnswer is the hook's JSON output.
type preToolUseAnswer struct {
	HookSpecificOutput preToolUseDecision `json:"hookSpecificOutput"`
}

type preToolUseDecision struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason"`
}

func answer(w http.ResponseWriter, decision, reason string) int {
	return writeJSON(w, http.StatusOK, preToolUseAnswer{HookSpecificOutput: preToolUseDecision{
		HookEventName: "PreToolUse", PermissionDecision: decision, PermissionDecisionReason: reason}})
}

// preToolUse answers Claude Code's PreToolUse hook: a mapped tool's call is
// an intent on its countersign tool, answered from the policy's verdict at
// once, or after a person decides, or ask when the wait ends first. It is
// never allow unless the request was approved.
func (h *Handler) preToolUse(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	body, status := readHookBody(w, r, approvals.MaxBodyBytes)
	if status != 0 {
		return status
	}
	if err := approvals.CheckJSON(body); err != nil {
		return writeRefusal(w, r, approvals.RefusalFor(err))
	}
	in, err := decodeToolUse(body, "PreToolUse")
	if err != nil {
		return writeRefusal(w, r, approvals.RefusalFor(err))
	}
	cfg := h.currentToolHooks()
	tool, ok := cfg.ToolFor(in.ToolName)
	if !ok {
		return answer(w, cfg.Unmapped, fmt.Sprintf("countersign maps no tool for %s; unmapped tools are answered %s.", in.ToolName, cfg.Unmapped))
	}
	intent, err := in.intent(tool)
	if err != nil {
		return writeRefusal(w, r, approvals.RefusalFor(err))
	}
	req, _, err := h.svc.Submit(r.Context(), agent.Name, intent)
	var denied *approvals.DeniedError
	switch {
	case errors.As(err, &denied):
		return answer(w, PermissionDeny, fmt.Sprintf("Denied by countersign policy %s: %s (request %s)", denied.Tier, denied.Message, denied.Key))
	case err != nil:
		switch ref := approvals.RefusalFor(err); ref.Code {
		case approvals.CodeUnavailable, approvals.CodeInternal, approvals.CodeInvalidRequest, approvals.CodeMalformedJSON:
			return h.writeServiceError(w, r, renameIntentFields(err))
		default:
			// The intent is refused (its effect schema, a key reused by
			// another input, a pruned request): the call is not allowed.
			return answer(w, PermissionDeny, fmt.Sprintf("countersign refused this call as %s on tool %s (%s): %s", in.ToolName, tool, ref.Code, ref.Message))
		}
	}
	view, err := viewOf(r.Context(), h.svc, req)
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	v := &view
	if v.Status == wire.StatusPending {
		if v, err = h.awaitDecision(r.Context(), agent, v, cfg.Wait); err != nil {
			return h.writeServiceError(w, r, err)
		}
	}
	decision, reason := decisionOf(v, cfg.Wait)
	h.logger.InfoContext(r.Context(), "pretooluse answered", slog.String("key", v.Key), slog.String("tool", tool),
		slog.String("agent_tool", in.ToolName), slog.String("decision", decision))
	return answer(w, decision, reason)
}

// awaitDecision waits up to wait for the pending request v to be decided,
// as GET ?wait does, and returns it as it then stands.
func (h *Handler) awaitDecision(ctx context.Context, agent approvals.Agent, v *wire.Request, wait time.Duration) (*wire.Request, error) {
	deadline := time.Now().Add(wait)
	for v.Status == wire.StatusPending {
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return v, nil
		}
		next, err := h.waitForChange(ctx, agent, v.ID, left, v.Version)
		if err != nil {
			return nil, err
		}
		v = next
	}
	return v, nil
}

// decisionOf is the hook's answer for the request as it stands: allow only
// when it was approved.
func decisionOf(v *wire.Request, wait time.Duration) (string, string) {
	d := v.Decision
	switch {
	case v.Status == wire.StatusApproved && d != nil && d.Via == approvals.ViaPolicy:
		return PermissionAllow, fmt.Sprintf("Allowed by countersign policy %s (request %s).", v.Policy.TierName, v.Key)
	case v.Status == wire.StatusApproved && d != nil:
		return PermissionAllow, fmt.Sprintf("Approved by %s via %s in countersign (request %s).", d.By, d.Via, v.Key)
	case v.Status == wire.StatusRejected && d != nil && strings.HasPrefix(d.By, "policy:"):
		return PermissionDeny, fmt.Sprintf("Denied by countersign policy %s: %s (request %s)", strings.TrimPrefix(d.By, "policy:"), d.Reason, v.Key)
	case v.Status == wire.StatusRejected && d != nil:
		reason := d.Reason
		if reason == "" {
			reason = "no reason given"
		}
		return PermissionDeny, fmt.Sprintf("Rejected by %s in countersign: %s (request %s).", d.By, reason, v.Key)
	case v.Status == wire.StatusPending:
		return PermissionAsk, fmt.Sprintf("countersign request %s awaits an approver (waited %s). It can still be decided on its card; "+
			"this call again (the same tool_use_id) is answered from that decision.", v.Key, wait)
	}
	return PermissionAsk, fmt.Sprintf("countersign request %s is %s without an approval; it was not allowed.", v.Key, v.Status)
}

// postToolUse records how a mapped tool's call went (PostToolUse:
// succeeded unless its tool_response says it failed; PostToolUseFailure:
// failed) as the outcome of its approved request. The same report again
// records nothing; a call with no approved request records nothing.
func (h *Handler) postToolUse(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	body, status := readHookBody(w, r, maxPostToolUseBody)
	if status != 0 {
		return status
	}
	in, err := decodeToolUse(body, "PostToolUse", "PostToolUseFailure")
	if err != nil {
		return writeRefusal(w, r, approvals.RefusalFor(err))
	}
	tool, ok := h.currentToolHooks().ToolFor(in.ToolName)
	if !ok {
		return writeJSON(w, http.StatusOK, struct{}{})
	}
	intent, err := in.intent(tool)
	if err != nil {
		return writeRefusal(w, r, approvals.RefusalFor(err))
	}
	key, _, err := approvals.Derive(intent.Basis())
	if err != nil {
		return writeRefusal(w, r, approvals.RefusalFor(invalid("tool_input", "%v", err)))
	}
	report := in.outcome()
	_, err = h.svc.ReportOutcome(r.Context(), agent, key, report)
	switch {
	case errors.Is(err, approvals.ErrNotFound), errors.Is(err, approvals.ErrNotAgentExecuted):
		// Asked of nobody, or never approved (the person allowed it in the
		// agent's own prompt after an ask): there is no write to settle.
		h.logger.InfoContext(r.Context(), "posttooluse: no approved request awaits this call's outcome",
			slog.String("key", key), slog.String("agent_tool", in.ToolName), slog.String("status", report.Status))
	case err != nil:
		return h.writeServiceError(w, r, err)
	}
	return writeJSON(w, http.StatusOK, struct{}{})
}

// outcome is how the call went: failed for PostToolUseFailure, or a
// tool_response that says so (is_error or isError true, success false,
// interrupted true); succeeded otherwise.
func (in toolUseInput) outcome() approvals.OutcomeReport {
	call := in.ToolName
	if in.ToolUseID != "" {
		call += " " + in.ToolUseID
	}
	if in.HookEventName == "PostToolUseFailure" {
		return approvals.OutcomeReport{Status: wire.OutcomeFailed, Detail: "Claude Code reported " + call + " failed: " + failureText(in.Error, in.IsInterrupt)}
	}
	var resp map[string]json.RawMessage
	if json.Unmarshal(in.ToolResponse, &resp) == nil {
		for _, f := range []struct{ name, means string }{{"is_error", "true"}, {"isError", "true"}, {"success", "false"}, {"interrupted", "true"}} {
			if v, ok := resp[f.name]; ok && string(bytes.TrimSpace(v)) == f.means {
				return approvals.OutcomeReport{Status: wire.OutcomeFailed,
					Detail: fmt.Sprintf("Claude Code reported %s done, and its tool_response has %s: %s", call, f.name, f.means)}
			}
		}
	}
	return approvals.OutcomeReport{Status: wire.OutcomeSucceeded, Detail: "Claude Code reported " + call + " done"}
}

// failureText is a failed call's error, cut to maxFailureDetail bytes.
func failureText(raw json.RawMessage, interrupted bool) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(bytes.TrimSpace(raw))
	}
	switch {
	case s == "" && interrupted:
		s = "interrupted"
	case s == "":
		s = "no error given"
	}
	if len(s) > maxFailureDetail {
		cut := maxFailureDetail
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// readHookBody reads a JSON body of at most limit bytes; a refusal's
// status when it cannot, else 0.
func readHookBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, int) {
	if !isJSON(r.Header.Get("Content-Type")) {
		return nil, writeRefusal(w, r, unsupportedMediaType)
	}
	if r.ContentLength > limit {
		return nil, writeRefusal(w, r, approvals.RefusalFor(approvals.ErrTooLarge))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, writeRefusal(w, r, approvals.RefusalFor(approvals.ErrTooLarge))
		}
		return nil, writeRefusal(w, r, approvals.RefusalFor(&approvals.InputError{Code: approvals.CodeMalformedJSON, Message: "The body could not be read."}))
	}
	return body, 0
}

// decodeToolUse reads a tool hook's input: one JSON object whose
// hook_event_name, when sent, is one of events, with a tool_name and a
// tool_input object; a session_id unless a tool_use_id names the call.
func decodeToolUse(body []byte, events ...string) (toolUseInput, error) {
	var in toolUseInput
	if !json.Valid(body) {
		return in, &approvals.InputError{Code: approvals.CodeMalformedJSON, Message: "The body must be the JSON input of a Claude Code " + events[0] + " hook."}
	}
	if trimmed := bytes.TrimSpace(body); len(trimmed) == 0 || trimmed[0] != '{' {
		return in, invalid("", "the body must be a JSON object: the hook's input")
	}
	if err := json.Unmarshal(body, &in); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return in, invalid(typeErr.Field, "%s must be a JSON %s", typeErr.Field, jsonKind(typeErr.Field))
		}
		return in, invalid("", "the body must be a JSON object: the hook's input")
	}
	switch {
	case in.HookEventName != "" && !slices.Contains(events, in.HookEventName):
		return in, invalid("hook_event_name", "hook_event_name is %q; this route takes %s", in.HookEventName, strings.Join(events, " or "))
	case strings.TrimSpace(in.ToolName) == "":
		return in, invalid("tool_name", "tool_name is required")
	case len(in.ToolInput) == 0 || bytes.TrimSpace(in.ToolInput)[0] != '{':
		return in, invalid("tool_input", "tool_input is required and must be a JSON object")
	case strings.TrimSpace(in.SessionID) == "":
		return in, invalid("session_id", "session_id is required: it is the run the call belongs to")
	case len(in.ToolUseID) > 256 || strings.TrimSpace(in.ToolUseID) != in.ToolUseID:
		return in, invalid("tool_use_id", "tool_use_id must be at most 256 bytes, without surrounding spaces")
	}
	return in, nil
}

// jsonKind names the JSON type a hook input field takes.
func jsonKind(field string) string {
	switch field {
	case "tool_input":
		return "object"
	case "is_interrupt":
		return "boolean"
	}
	return "string"
}

// intent is the call as an intent on tool: its effect the tool's input,
// its run the session, its step the tool_use_id, or when none is sent a
// digest of the tool's name and canonical input (the same call again in
// the session is then the same intent).
func (in toolUseInput) intent(tool string) (approvals.Intent, error) {
	var step any = in.ToolUseID
	if in.ToolUseID == "" {
		canonical, err := approvals.Canonicalize(in.ToolInput)
		if err != nil {
			return approvals.Intent{}, invalid("tool_input", "tool_input cannot be put in canonical form (RFC 8785): %v", err)
		}
		sum := sha256.Sum256(append([]byte(in.ToolName+"\n"), canonical...))
		step = "sha256:" + hex.EncodeToString(sum[:])
	}
	summary := "Claude Code " + in.ToolName
	if in.Cwd != "" {
		summary += " in " + in.Cwd
	}
	if len(summary) > 2000 {
		summary = summary[:2000]
		for !utf8.ValidString(summary) {
			summary = summary[:len(summary)-1]
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"run_id": in.SessionID, "step": step, "tool": tool,
		"effect": json.RawMessage(in.ToolInput), "summary": summary}); err != nil {
		return approvals.Intent{}, invalid("tool_input", "tool_input is not JSON")
	}
	intent, err := approvals.DecodeIntent(buf.Bytes())
	return intent, renameIntentFields(err)
}

// hookFields are the hook input's names for an intent's fields.
var hookFields = map[string]string{"run_id": "session_id", "step": "tool_use_id", "effect": "tool_input", "summary": "cwd"}

// renameIntentFields names, in a refusal of the intent made from a hook's
// input, the input's field rather than the intent's.
func renameIntentFields(err error) error {
	var input *approvals.InputError
	if err == nil || !errors.As(err, &input) {
		return err
	}
	renamed := *input
	for from, to := range hookFields {
		switch {
		case renamed.Field == from:
			renamed.Field = to
		case strings.HasPrefix(renamed.Field, "/"+from+"/") || renamed.Field == "/"+from:
			renamed.Field = "/" + to + strings.TrimPrefix(renamed.Field, "/"+from)
		default:
			continue
		}
		renamed.Message = strings.ReplaceAll(renamed.Message, "/"+from, "/"+to)
		break
	}
	return &renamed
}
