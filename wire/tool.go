package wire

import "encoding/json"

// Tool is a tool an agent may request, as GET /v1/tools shows it.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Reversible  bool   `json:"reversible"`
	// Policy is the tool's own policy: who decides and how many must
	// approve. A tier that matches an effect sets the request's.
	Policy Policy `json:"policy"`
	// EffectSchema is the JSON Schema (2020-12) an effect must satisfy, if
	// the tool has one.
	EffectSchema json.RawMessage `json:"effect_schema,omitempty"`
}

// Policy is a tool's approval policy.
type Policy struct {
	// Verdict is the tool's own: allow, deny or ask (tiers may decide
	// otherwise for the effects they match).
	Verdict string `json:"verdict"`
	// Approvals is how many distinct approvers a round needs when the
	// tool's own rule asks; 0 when it allows or denies.
	Approvals int `json:"approvals"`
	// Approvers are the Slack user and user-group ids, or local reviewers,
	// who may approve.
	Approvers []string `json:"approvers"`
	// Version is the digest of the tool's rules.
	Version string `json:"version"`
}

// ToolList is the answer of GET /v1/tools.
type ToolList struct {
	Tools []Tool `json:"tools"`
}
