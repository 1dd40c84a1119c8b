package approvals

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/countersign/countersign/store"
)

// Verdict is what a tool's policy says of an effect before any human sees
// it: allowed (approvals: 0), denied (deny: "why"), or asked of reviewers.
type Verdict = store.PolicyVerdict

// The three verdicts.
const (
	VerdictAllow = store.PolicyAllow
	VerdictDeny  = store.PolicyDeny
	VerdictAsk   = store.PolicyAsk
)

// DefaultTierName names the tool's own rule, the one that applies when no
// tier matches: a decision by it is "policy:default".
const DefaultTierName = "default"

// Rule is a tier's condition: today's {field, op, value} form (Condition)
// or a compiled CEL expression. A rule that cannot be evaluated against an
// input (a field it reads is missing, a cost limit is hit) does not match:
// a tier never lets a write through by erroring.
type Rule interface {
	Matches(in PolicyInput) bool
	// Source is the rule as configured, for the policy version and explain.
	Source() string
}

// PolicyInput is what a rule reads: the effect (decoded with json.Number
// numbers), the tool, the agent, the person the write is for, and the time.
type PolicyInput struct {
	Effect       any
	Tool         string
	Agent        string
	RequestedFor string
	Now          time.Time

	// celVars is the input as CEL rules read it, converted once for every
	// tier that reads it (see celVariables); nil in an input built by hand.
	celVars *celVars
}

// NewPolicyInput decodes effect (JSON) for rules to read.
func NewPolicyInput(effect []byte, tool, agent, requestedFor string, now time.Time) (PolicyInput, error) {
	dec := json.NewDecoder(bytes.NewReader(effect))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return PolicyInput{}, fmt.Errorf("decoding the effect: %w", err)
	}
	return PolicyInput{Effect: doc, Tool: tool, Agent: agent, RequestedFor: requestedFor, Now: now, celVars: &celVars{}}, nil
}

// Evaluation is what a tool's policy says of one input.
type Evaluation struct {
	// Policy is what is frozen on the request: the verdict, the tier, the
	// approvals and approvers a round needs, and the policy's version.
	Policy store.Policy
	// Notify asks for a card without buttons on an allowed write.
	Notify bool
	// Shadow lists the shadow tiers that matched, in order: recorded,
	// deciding nothing.
	Shadow []store.ShadowMatch
}

// Evaluate walks the tool's tiers in order: every shadow tier that matches is
// recorded, and the first other tier that matches decides; when none does,
// the tool's own rule does.
func (t Tool) Evaluate(in PolicyInput) Evaluation {
	var ev Evaluation
	p := store.Policy{Verdict: t.Verdict, Approvals: max(t.Approvals, 1), Approvers: t.Approvers,
		TierName: DefaultTierName, Deny: t.Deny, Version: t.PolicyVersion(), Execute: t.Execute}
	notify := t.Notify
	for i, tier := range t.Tiers {
		if !tier.When.Matches(in) {
			continue
		}
		if tier.Shadow {
			ev.Shadow = append(ev.Shadow, store.ShadowMatch{Tier: tier.name(i), Verdict: tier.verdict()})
			continue
		}
		p.Verdict, p.Deny, p.TierName = tier.verdict(), tier.Deny, tier.name(i)
		if tier.Approvals > 0 {
			p.Approvals = tier.Approvals
		}
		if len(tier.Approvers) > 0 {
			p.Approvers = tier.Approvers
		}
		p.Tier = &i
		notify = tier.Notify
		break
	}
	if p.Verdict == "" {
		p.Verdict = VerdictAsk
	}
	if p.Verdict != VerdictAsk {
		p.Approvals = 0
	}
	if p.Verdict != VerdictDeny {
		p.Deny = ""
	}
	p.Shadow = ev.Shadow // frozen on the request and in its requested event
	ev.Policy, ev.Notify = p, notify && p.Verdict == VerdictAllow
	return ev
}

// PolicyFor resolves the review policy of a new request from the tool and
// its effect alone (no agent, person or time): Evaluate's policy.
func (t Tool) PolicyFor(effect []byte) store.Policy {
	in, err := NewPolicyInput(effect, t.Name, "", "", time.Now())
	if err != nil {
		return store.Policy{Verdict: VerdictAsk, Approvals: max(t.Approvals, 1), Approvers: t.Approvers,
			TierName: DefaultTierName, Version: t.PolicyVersion(), Execute: t.Execute}
	}
	return t.Evaluate(in).Policy
}

// name is the tier's configured name, or its place ("tier-1" for the first).
func (tier Tier) name(i int) string {
	if tier.Name != "" {
		return tier.Name
	}
	return fmt.Sprintf("tier-%d", i+1)
}

// verdict is the tier's verdict; an unset one asks.
func (tier Tier) verdict() Verdict {
	if tier.Verdict == "" {
		return VerdictAsk
	}
	return tier.Verdict
}

// PolicyVersion is the tool's policy version: Version when the tool was
// loaded with it, else its digest computed now.
func (t Tool) PolicyVersion() string {
	if t.Version != "" {
		return t.Version
	}
	return t.digest()
}

// digest is a digest of the rules that decide the tool's verdicts:
// its own rule and every tier that is not a shadow, in order, and who
// performs the approved write when it is the agent. Shadow tiers, reminders
// and the card's settings do not change it, so turning a shadow rule on
// does not re-check approvals already given; turning an agent-executed
// tool into a dispatched one does (the executor escalates what was
// approved for the agent).
func (t Tool) digest() string {
	type rule struct {
		Name      string   `json:"name,omitempty"`
		When      string   `json:"when,omitempty"`
		Verdict   Verdict  `json:"verdict"`
		Deny      string   `json:"deny,omitempty"`
		Approvals int      `json:"approvals"`
		Approvers []string `json:"approvers"`
		Execute   string   `json:"execute,omitempty"`
	}
	verdict := t.Verdict
	if verdict == "" {
		verdict = VerdictAsk
	}
	rules := []rule{{Verdict: verdict, Deny: t.Deny, Approvals: max(t.Approvals, 1), Approvers: t.Approvers, Execute: t.Execute}}
	for i, tier := range t.Tiers {
		if tier.Shadow {
			continue
		}
		r := rule{Name: tier.name(i), Verdict: tier.verdict(), Deny: tier.Deny, Approvals: tier.Approvals, Approvers: tier.Approvers}
		if tier.When != nil {
			r.When = tier.When.Source()
		}
		rules = append(rules, r)
	}
	b, _ := json.Marshal(rules) // plain values: cannot fail
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// Stricter reports whether the policy in force now (now) asks more of an
// approved write than the policy it was approved under (frozen): a denial,
// or more approvals than were given. An allowed write was given none; a
// granted one, one.
func Stricter(frozen store.Policy, now store.Policy, granted bool) bool {
	switch now.Verdict {
	case VerdictDeny:
		return true
	case VerdictAllow, "":
		return false
	}
	given := frozen.Needed()
	switch {
	case granted:
		given = 1
	case frozen.Verdict == VerdictAllow:
		given = 0
	}
	return now.Needed() > given
}
