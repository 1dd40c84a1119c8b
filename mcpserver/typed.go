package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/client"
)

// typedToolName is the MCP tool of a configured tool: request_ and its name,
// each character MCP names do not take (dots among them) an underscore.
func typedToolName(tool string) string {
	return "request_" + strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, tool)
}

// fixedNames are the fixed tools' names, which a typed tool may not take.
var fixedNames = map[string]bool{"list_tools": true, "request_write": true, "get_request": true,
	"list_requests": true, "wait_for_outcome": true, "cancel_request": true}

// typedTool is the tool that requests t's writes, its effect described by
// t's effect schema; nil when its name is a fixed tool's.
func (h *handlers) typedTool(t client.Tool) (*served, error) {
	name := typedToolName(t.Name)
	if fixedNames[name] {
		return nil, nil
	}
	schema, err := inputSchema(t.EffectSchema)
	if err != nil {
		return nil, err
	}
	description := "Asks a person to approve a write with the tool " + t.Name
	if t.Description != "" {
		description += " (" + strings.TrimSuffix(t.Description, ".") + ")"
	}
	description += fmt.Sprintf("; it needs %d approval(s), and its write %s. Once approved, countersign performs exactly that write, once. "+
		"Returns the request at once (status pending): then call wait_for_outcome with its key. The effect must satisfy the schema below; a refusal names the field at fault. ",
		max(t.Policy.Approvals, 1), map[bool]string{true: "can be undone", false: "cannot be undone"}[t.Reversible]) + retrySafe
	tool := t.Name
	return &served{
		tool: &mcp.Tool{
			Name: name, Description: description, InputSchema: schema,
			Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(!t.Reversible)},
		},
		handle: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				writeArgs
				// Tool is refused: the tool is this one's.
				Tool *json.RawMessage `json:"tool"`
			}
			if res := decodeArgs(req.Params.Arguments, &args); res != nil {
				return res, nil
			}
			if args.Tool != nil {
				return argumentError("/tool", "this tool writes with "+tool+" only; use request_write to name another"), nil
			}
			args.writeArgs.Tool = tool
			return h.submit(ctx, args.writeArgs)
		},
	}, nil
}

// inputSchema wraps a tool's bundled effect schema as a typed tool's input
// schema (see the package doc for the shape).
func inputSchema(effectSchema json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(effectSchema))
	dec.UseNumber() // a bound such as 9007199254740993 keeps its digits
	var effect map[string]any
	if err := dec.Decode(&effect); err != nil {
		return nil, fmt.Errorf("the effect schema is not a JSON object: %w", err)
	}
	delete(effect, "$schema")
	delete(effect, "$id")
	rebaseRefs(effect, "/properties/effect")
	properties := map[string]any{"effect": effect}
	for name, raw := range map[string]string{"run_id": runIDSchema, "step": stepSchema, "summary": summarySchema,
		"reason": reasonSchema, "requested_for": requestedForSchema, "idempotency_key": keySchema} {
		properties[name] = json.RawMessage(raw)
	}
	return json.Marshal(map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"type":                 "object",
		"required":             []string{"run_id", "step", "effect"},
		"additionalProperties": false,
		"properties":           properties,
	})
}

// rebaseRefs rewrites every local $ref in the schema v ("#", "#/$defs/x")
// to point at the same place once v sits at prefix in another document. It
// does not descend into values that are data, not schemas.
func rebaseRefs(v any, prefix string) {
	switch v := v.(type) {
	case map[string]any:
		for key, child := range v {
			switch key {
			case "$ref", "$dynamicRef":
				if ref, ok := child.(string); ok && strings.HasPrefix(ref, "#") && (ref == "#" || strings.HasPrefix(ref, "#/")) {
					v[key] = "#" + prefix + ref[1:]
				}
			case "const", "enum", "default", "examples":
			default:
				rebaseRefs(child, prefix)
			}
		}
	case []any:
		for _, child := range v {
			rebaseRefs(child, prefix)
		}
	}
}
