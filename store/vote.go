package store

import "time"

// Policy is how a request round is decided, resolved from its tool at intake
// and frozen on the request: a later change of configuration does not move
// a pending request (an approved one is re-checked before it is sent).
type Policy struct {
	// Verdict is the policy's: allow (decided at intake, no human), deny
	// (refused at intake), or ask (a round of human approvals). Empty, on
	// requests stored before verdicts existed, is ask.
	Verdict PolicyVerdict `json:"verdict,omitempty"`
	// Approvals is how many distinct eligible reviewers must approve.
	Approvals int `json:"approvals"`
	// Approvers are the user and user-group ids that may vote. Nil
	// (requests stored before policies existed) means the tool's approvers
	// as configured when the vote is cast.
	Approvers []string `json:"approvers,omitempty"`
	// Tier is the index of the tool's tier that matched the effect, or nil
	// when none did and the tool's own policy applies.
	Tier *int `json:"tier"`
	// TierName names the rule that decided: a tier's name, or "default"
	// for the tool's own. Empty on requests stored before names existed.
	TierName string `json:"tier_name,omitempty"`
	// Version is the digest of the tool's rules when the policy was frozen.
	Version string `json:"version,omitempty"`
	// Deny is a deny verdict's message, the answer to every replay.
	Deny string `json:"deny,omitempty"`
	// Shadow lists the shadow tiers that matched: what they would have done.
	Shadow []ShadowMatch `json:"shadow,omitempty"`
	// Execute is ExecuteAgent when the tool's agent performs the approved
	// write itself, frozen so that a tool turned into a dispatched one
	// never has countersign send a write approved for its agent; "" when
	// countersign sends it.
	Execute string `json:"execute,omitempty"`
}

// ExecuteAgent is a policy's Execute when the agent, not countersign,
// performs the approved write.
const ExecuteAgent = "agent"

// AgentExecuted reports whether the write is the agent's to perform.
func (p Policy) AgentExecuted() bool { return p.Execute == ExecuteAgent }

// PolicyVerdict is what a policy says of an effect before anyone reviews it.
type PolicyVerdict string

// The verdicts of a policy.
const (
	PolicyAllow PolicyVerdict = "allow"
	PolicyDeny  PolicyVerdict = "deny"
	PolicyAsk   PolicyVerdict = "ask"
)

// ShadowMatch is a shadow tier that matched a request's effect and what it
// would have decided.
type ShadowMatch struct {
	Tier    string        `json:"tier"`
	Verdict PolicyVerdict `json:"verdict"`
}

// Needed is the number of approvals that decides a round: at least one.
func (p Policy) Needed() int { return max(p.Approvals, 1) }

// Vote is one reviewer's verdict on a request round. A round has at most one
// vote per reviewer.
type Vote struct {
	ID              int64
	RequestID       string
	Round           int
	Voter           string
	Verdict         Verdict
	Reason          string
	Via             string
	PayloadHashSeen string
	VotedAt         time.Time
}

// VoteParams describes a vote to cast: DecideParams' fields, DecidedBy being
// the voter, with the reason they gave.
type VoteParams = DecideParams

// VoteResult is what a vote did.
type VoteResult struct {
	// Open is false when the request was not pending in that round with that
	// payload hash and unexpired: nothing was written and the caller says
	// why (decided, stale card, expired).
	Open bool
	// Request is the request after the vote.
	Request Request
	// Vote is the voter's vote in the round: the one cast now, or, when Cast
	// is false, the one they cast before (a repeated click changes nothing).
	Vote Vote
	Cast bool
	// Decided is true only for the vote that decided the round; Decision is
	// then the decision it wrote.
	Decided  bool
	Decision Decision
	// Grant is the standing grant the deciding approval created
	// (VoteParams.Grant); nil otherwise.
	Grant *Grant
	// Votes are the round's votes after this one, oldest first.
	Votes []Vote
}

// Approvals counts the approving votes among votes.
func Approvals(votes []Vote) int {
	n := 0
	for _, v := range votes {
		if v.Verdict == VerdictApprove {
			n++
		}
	}
	return n
}
