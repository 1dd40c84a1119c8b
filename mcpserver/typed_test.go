package mcpserver_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/countersign/countersign/mcpserver"
)

func TestTypedToolNames(t *testing.T) {
	t.Parallel()
	for tool, want := range map[string]string{
		"billing.credit":     "request_billing_credit",
		"demo.refund":        "request_demo_refund",
		"crm/contact update": "request_crm_contact_update",
		"ok_name-2":          "request_ok_name-2",
	} {
		if got := mcpserver.TypedToolName(tool); got != want {
			t.Errorf("TypedToolName(%q) = %q, want %q", tool, got, want)
		}
	}
}

// The effect schema sits under properties.effect as it is, less its
// dialect and id, with its local $refs rebased so they still resolve, and
// data that looks like a $ref left alone; its numbers keep their digits.
func TestInputSchemaNestsTheEffectSchema(t *testing.T) {
	t.Parallel()
	raw, err := mcpserver.InputSchema(json.RawMessage(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.com/credit",
		"type": "object", "required": ["amount_cents", "line"],
		"properties": {
			"amount_cents": {"type": "integer", "maximum": 9007199254740993},
			"line": {"$ref": "#/$defs/line"},
			"self": {"$ref": "#"},
			"note": {"const": {"$ref": "#/not/a/schema"}}
		},
		"$defs": {"line": {"type": "object", "properties": {"sku": {"$ref": "#/$defs/sku"}}}, "sku": {"type": "string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal([]byte(`{
		"type": "object", "required": ["amount_cents", "line"],
		"properties": {
			"amount_cents": {"type": "integer", "maximum": 9007199254740993},
			"line": {"$ref": "#/properties/effect/$defs/line"},
			"self": {"$ref": "#/properties/effect"},
			"note": {"const": {"$ref": "#/not/a/schema"}}
		},
		"$defs": {"line": {"type": "object", "properties": {"sku": {"$ref": "#/properties/effect/$defs/sku"}}}, "sku": {"type": "string"}}}`), &want); err != nil {
		t.Fatal(err)
	}
	props := got["properties"].(map[string]any)
	if !reflect.DeepEqual(props["effect"], want) {
		t.Errorf("effect = %v\nwant %v", props["effect"], want)
	}
	if !strings.Contains(string(raw), `"maximum":9007199254740993`) {
		t.Errorf("the bound lost its digits: %s", raw)
	}
	for _, name := range []string{"run_id", "step", "summary", "reason", "requested_for", "idempotency_key"} {
		if props[name] == nil {
			t.Errorf("no %s among the arguments", name)
		}
	}
	if got["type"] != "object" || got["additionalProperties"] != false || !reflect.DeepEqual(got["required"], []any{"run_id", "step", "effect"}) ||
		got["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("the wrapper: %s", raw)
	}
	if _, err := mcpserver.InputSchema(json.RawMessage(`[1]`)); err == nil {
		t.Error("a schema that is not an object was wrapped")
	}
}

// Two tools whose names become one typed tool are refused, both named, as
// is a typed name longer than a model API takes; a name of 56 characters
// (64 with request_) is fine.
func TestCheckTypedToolNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 56)
	if err := mcpserver.CheckTypedToolNames([]string{"billing.credit", "notes.add", long}); err != nil {
		t.Errorf("distinct names: %v", err)
	}
	err := mcpserver.CheckTypedToolNames([]string{"billing_credit", "notes.add", "billing.credit", long + "b"})
	if err == nil {
		t.Fatal("colliding and long names passed")
	}
	msg := err.Error()
	for _, want := range []string{"tools.billing_credit: it and tools.billing.credit would both be the MCP tool request_billing_credit",
		"tools." + long + "b: its MCP tool request_" + long + "b would be 65 characters"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error %q does not say %q", msg, want)
		}
	}
}
