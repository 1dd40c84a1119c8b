package approvals

import (
	"slices"
	"time"

	"github.com/countersign/countersign/identity"
)

// Tool is what review needs to know of a configured tool.
type Tool struct {
	Name        string
	Channel     string        // Slack channel for its cards
	Approvers   []string      // identities as printed (identity.ID.String): people and user groups
	RequestTTL  time.Duration // how long a request waits for a decision
	MaxAttempts int           // the cap copied onto each execution
	Reversible  bool
	// Approvals is how many distinct approvers a round needs (0 or 1: one).
	Approvals int
	// Verdict is the tool's own: ask (the default), allow (approvals: 0)
	// or deny, with Deny its message. Notify posts a card without buttons
	// for a write the tool's own rule allows.
	Verdict Verdict
	Deny    string
	Notify  bool
	// Tiers override the tool's own rule for the effects they match; the
	// first match that is not a shadow wins (see Evaluate).
	Tiers []Tier
	// Version, when set, is PolicyVersion computed once when the tool was
	// loaded (a digest per intent costs more than the rest of the policy);
	// empty, it is computed at each evaluation.
	Version string
	// Grants, when set, lets an approver allow similar writes for a while.
	Grants *GrantRule
	// RejectReason is whether a reject asks for a reason.
	RejectReason ReasonRule
	// Description tells an agent what the tool does (GET /v1/tools).
	Description string
	// EffectSchema, when set, is what every effect must satisfy; an effect
	// that fails it is refused before anything else is done with it.
	EffectSchema *EffectSchema

	// RemindAfter, when set, is how long a round waits before one thread
	// reply reminds the approvers; EscalateAfter, before one mentions
	// EscalateTo (users and user groups). With EscalateAddsApprovers the
	// escalated may decide the round too, once it is escalated.
	RemindAfter           time.Duration
	EscalateAfter         time.Duration
	EscalateTo            []string
	EscalateAddsApprovers bool

	// Execute is "" when countersign sends the tool's approved writes, or
	// ExecuteAgent when the agent performs them itself with a receipt and
	// reports their outcome within OutcomeTimeout (0: DefaultOutcomeTimeout).
	Execute        string
	OutcomeTimeout time.Duration

	// Surfaces names the review surfaces its requests go to (slack,
	// email, ...); nil goes to every surface serve runs.
	Surfaces []string

	// Upstream names the MCP server whose tool this is, for a tool the
	// gateway exposes (docs/GATEWAY.md); its Description then says what
	// the upstream declared of it. "" for a configured tool.
	Upstream string

	// Preview, when set, is asked what a request's write changes before
	// its first card is posted (docs/CONSOLE.md, "What changes").
	// BusinessID names the effect's top-level field that identifies what
	// a write touches: without a preview, the console compares a request
	// with the latest earlier one holding the same value there.
	Preview    *PreviewEndpoint
	BusinessID string
}

// GrantRule is how far a standing grant may reach on a tool: at most MaxTTL,
// and only for later effects whose Match fields equal the approved one's
// (and whose Amount field, when named, is at most the approved amount).
type GrantRule struct {
	MaxTTL time.Duration
	Match  []string // dotted paths into the effect
	Amount string   // dotted path of the amount; "": no ceiling
}

// ReasonRule is whether a reject asks the reviewer why.
type ReasonRule string

// Reason rules; the zero value is ReasonOff.
const (
	ReasonOff      ReasonRule = "off"
	ReasonOptional ReasonRule = "optional"
	ReasonRequired ReasonRule = "required"
)

// AsksReason reports whether a reject opens a form for its reason.
func (r ReasonRule) AsksReason() bool { return r == ReasonOptional || r == ReasonRequired }

// Default review settings for a tool that leaves them out.
const (
	DefaultRequestTTL  = 72 * time.Hour
	DefaultMaxAttempts = 5
)

// configuredApprovers is everyone the tool's configuration names as an
// approver: its own approvers and every tier's. A vote or a resolution needs
// the person among them as well as among the request's frozen approvers
// (MayVote). It is the person's standing with the tool that is checked, not
// the tier the effect would match today: the request keeps its frozen tier,
// and re-evaluating it could leave a waiting request, or a write that needs
// review, with nobody allowed to answer it.
func (t Tool) configuredApprovers() []string {
	ids := slices.Clone(t.Approvers)
	for _, tier := range t.Tiers {
		ids = append(ids, tier.Approvers...)
	}
	return ids
}

// isGroupID reports whether an approver names a user group
// (identity.ID.IsGroup), whose members a GroupResolver lists.
func isGroupID(s string) bool {
	id, err := identity.Parse(s)
	return err == nil && id.IsGroup()
}
