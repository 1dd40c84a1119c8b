package approvals

import "github.com/countersign/countersign/store"

// PolicyDecisionText words a decision that a rule of the tool's policy made
// at intake, as lookup, the card and the audit show it: "allowed by policy
// rule small-credits", "denied by policy rule wires-abroad: wires abroad go
// through treasury". It is empty for a policy that asked a human.
func PolicyDecisionText(p store.Policy) string {
	switch p.Verdict {
	case VerdictAllow:
		return "allowed by policy rule " + p.TierName
	case VerdictDeny:
		text := "denied by policy rule " + p.TierName
		if p.Deny != "" {
			text += ": " + p.Deny
		}
		return text
	}
	return ""
}

// policyDecisionData is what a policy's decision adds to its audit event:
// the sentence, and the version of the rules that made it.
func policyDecisionData(p store.Policy) map[string]any {
	return map[string]any{"policy": PolicyDecisionText(p), "policy_version": p.Version}
}
