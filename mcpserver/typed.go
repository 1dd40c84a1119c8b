package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/wire"
)

// typedPrefix starts every typed tool's name.
const typedPrefix = "request_"

// typedToolName is the MCP tool of a configured tool: request_ and its name,
// each character MCP names do not take (dots among them) an underscore.
func typedToolName(tool string) string {
	return typedPrefix + strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, tool)
}

// maxToolNameLength is the longest tool name the model APIs take.
const maxToolNameLength = 64

// CheckTypedToolNames reports every tool among tools (the names of the
// tools with an effect schema, which get a typed tool) whose typed tool
// would not be its own: two tools whose names become one typed name
// (billing.credit and billing_credit: the one tool would write with the
// other's schema and provider), and a typed name longer than the 64
// characters a model API takes. Each error starts "tools.<name>: ".
func CheckTypedToolNames(tools []string) error {
	tools = slices.Sorted(slices.Values(tools))
	var errs []error
	first := map[string]string{}
	for _, tool := range tools {
		name := typedToolName(tool)
		if len(name) > maxToolNameLength {
			errs = append(errs, fmt.Errorf("tools.%s: its MCP tool %s would be %d characters, more than the %d a model API takes: shorten the tool's name to at most %d characters",
				tool, name, len(name), maxToolNameLength, maxToolNameLength-len(typedPrefix)))
			continue
		}
		if other, ok := first[name]; ok {
			errs = append(errs, fmt.Errorf("tools.%s: it and tools.%s would both be the MCP tool %s: rename one of them (names differing only in characters other than letters, digits, _ and - become the same tool)",
				tool, other, name))
			continue
		}
		first[name] = tool
	}
	return errors.Join(errs...)
}

// typedNames is, for each tool with an effect schema, the name of its
// typed tool; a tool whose typed tool would not be its own
// (CheckTypedToolNames) has none, and neither does the tool it collides
// with.
func typedNames(tools []client.Tool) (names map[string]string, skipped []string) {
	byName := map[string][]string{}
	for _, t := range tools {
		if len(t.EffectSchema) > 0 {
			name := typedToolName(t.Name)
			byName[name] = append(byName[name], t.Name)
		}
	}
	names = map[string]string{}
	for name, owners := range byName {
		if len(owners) > 1 || len(name) > maxToolNameLength || fixedNames[name] {
			skipped = append(skipped, owners...)
			continue
		}
		names[owners[0]] = name
	}
	slices.Sort(skipped)
	return names, skipped
}

// fixedNames are the fixed tools' names, which a typed tool may not take.
var fixedNames = map[string]bool{"list_tools": true, "request_write": true, "get_request": true,
	"list_requests": true, "wait_for_outcome": true, "cancel_request": true, "report_outcome": true}

// typedTool is the tool name that requests t's writes, its effect
// described by t's effect schema.
func (h *handlers) typedTool(t client.Tool, name string) (*served, error) {
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
		max(t.Policy.Approvals, 1), map[bool]string{true: "can be undone", false: "cannot be undone"}[t.Reversible]) + policyDecides + retrySafe
	tool := t.Name
	return &served{
		tool: &mcp.Tool{
			Name: name, Description: description, InputSchema: schema,
			Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(!t.Reversible)},
		},
		handle: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// Decoded as request_write's arguments, so a value at fault is
			// named as it was sent (/run_id); a tool is refused, whatever
			// its value: the tool is this one's.
			var named struct {
				Tool *json.RawMessage `json:"tool"`
			}
			if json.Unmarshal(req.Params.Arguments, &named) == nil && named.Tool != nil {
				return argumentError("/tool", "this tool writes with "+tool+" only; use request_write to name another"), nil
			}
			var args wire.Intent
			if res := decodeArgs(req.Params.Arguments, &args); res != nil {
				return res, nil
			}
			args.Tool = tool
			return h.submit(ctx, args)
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
