package bot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/misleading"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// Contract names on the card (docs/ARCHITECTURE.md, "The contracts").
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
	// ActionApproveGrant approves and allows similar writes for the
	// duration its value carries (a standing grant).
	ActionApproveGrant = "approve_grant"
	// CardEventType is the message metadata event type of every card.
	CardEventType = "countersign_card"
)

// Slack's Block Kit limits that the card has to respect.
const (
	maxHeader      = 150
	maxSectionText = 3000
	maxEffectText  = 2800 // leaves room for the code fence and the note
)

// cardView is everything a round's card shows, read from the ledger.
type cardView = surface.View

// decisionValue is what an approve or reject button carries: enough for the
// click to be checked against the round and the payload the reviewer saw.
type decisionValue struct {
	RequestID   string `json:"r"`
	Round       int    `json:"n"`
	PayloadHash string `json:"h"`
	// GrantSeconds, on the approve-and-allow button, is how long the
	// grant lasts, as the card offered it.
	GrantSeconds int64 `json:"g,omitempty"`
}

// resolveValue is what a needs-review button carries.
type resolveValue struct {
	RequestID   string `json:"r"`
	ExecutionID int64  `json:"x"`
}

// cardMetadata lets the worker find its own card in the channel's history.
func cardMetadata(req store.Request, round int) slack.SlackMetadata {
	return slack.SlackMetadata{EventType: CardEventType, EventPayload: map[string]any{
		"key": req.Key, "round": round, "request_id": req.ID,
	}}
}

// renderCard returns the card's notification text and blocks.
func renderCard(v cardView) (string, []slack.Block) {
	req := v.Request
	short := approvals.ShortKey(req.Key)
	summary := req.Summary
	if strings.TrimSpace(summary) == "" {
		summary = req.Tool
	}
	// The notification text is mrkdwn too: escaped, so an agent cannot @channel.
	fallback := fmt.Sprintf("Approval request %s: %s", short, escape(cut(summary, 300)))
	if byRule(v) {
		fallback = fmt.Sprintf("Allowed by policy %s: %s", short, escape(cut(summary, 300)))
	}

	var blocks []slack.Block
	blocks = append(blocks, slack.NewHeaderBlock(plain(cut(summary, maxHeader))))

	fields := []*slack.TextBlockObject{
		mrkdwn("*Tool*\n`" + escape(req.Tool) + "`"),
		mrkdwn("*Run / step*\n`" + escape(req.RunID) + "` / `" + escape(string(req.Step)) + "`"),
		mrkdwn("*Requested by*\n" + escape(req.RequestedBy)),
		mrkdwn("*Requested for*\n" + mention(req.RequestedFor)),
		mrkdwn("*Expires*\n" + slackDate(req.ExpiresAt)),
		mrkdwn("*Reversible*\n" + reversible(v.Tool.Reversible)),
	}
	blocks = append(blocks, slack.NewSectionBlock(nil, fields, nil))
	if v.Tool.Upstream != "" {
		// An upstream's tool through the MCP gateway: what it is and what
		// its server says of it, before the arguments.
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(cut("*MCP tool*\n"+escape(v.Tool.Description), maxSectionText)), nil, nil))
	}
	if strings.TrimSpace(req.Reason) != "" {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(cut("*Reason*\n"+escape(req.Reason), maxSectionText)), nil, nil))
	}
	blocks = append(blocks, slack.NewSectionBlock(mrkdwn(effectText(req)), nil, nil))
	blocks = append(blocks, changeBlocks(v)...)
	if found := misleading.Find(req.Snapshot); len(found) > 0 {
		lines := make([]string, len(found))
		for i, f := range found {
			lines[i] = "• " + escape(f.String())
		}
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(cut(":warning: *Check the text*\n"+strings.Join(lines, "\n"), maxSectionText)), nil, nil))
	}
	blocks = append(blocks, slack.NewContextBlock("",
		mrkdwn(fmt.Sprintf("Key `%s` · round %d · payload `%s`", short, v.Round, escape(req.PayloadHash)))))
	blocks = append(blocks, slack.NewDividerBlock())
	blocks = append(blocks, slack.NewSectionBlock(mrkdwn(cut(policyText(v), maxSectionText)), nil, nil))
	blocks = append(blocks, slack.NewSectionBlock(mrkdwn(cut(statusText(v), maxSectionText)), nil, nil))
	if actions := actionsBlock(v); actions != nil {
		blocks = append(blocks, actions)
	}
	return fallback, blocks
}

// policyText is the round's policy, its votes so far and who may still
// act: "needs 2 approvals from @fin-leads · 1 of 2 approvals: @ana".
func policyText(v cardView) string {
	p := v.Request.Policy
	if byRule(v) { // nobody reviews: the rule and its version are the policy
		return "*Policy* " + ruleText(p)
	}
	text := "*Review* " + approvals.PolicyText(p, v.Approvers, approverMention)
	if p.Tier != nil {
		text += fmt.Sprintf(" (tier %d)", *p.Tier+1)
	}
	if p.Version != "" {
		text += "\nPolicy " + ruleText(p)
	}
	var approvedBy []string
	for _, vote := range v.Votes {
		if vote.Verdict == store.VerdictApprove {
			approvedBy = append(approvedBy, mention(vote.Voter))
		}
	}
	if len(approvedBy) > 0 || p.Needed() > 1 {
		text += fmt.Sprintf("\n%d of %d approvals", store.Approvals(v.Votes), p.Needed())
		if len(approvedBy) > 0 {
			text += ": " + strings.Join(approvedBy, ", ")
		}
	}
	if v.State == string(store.RequestPending) {
		if waiting := stillToAct(v.Approvers, v.Votes, v.Request.RequestedFor); len(waiting) > 0 {
			names := make([]string, len(waiting))
			for i, id := range waiting {
				names[i] = approverMention(id)
			}
			text += "\nMay still act: " + strings.Join(names, ", ")
		}
	}
	return text
}

// ruleText names the rule that set a request's policy and the policy's
// version: "rule `large-credits` · version `sha256:…`".
func ruleText(p store.Policy) string {
	return fmt.Sprintf("rule `%s` · version `%s`", escape(p.TierName), escape(p.Version))
}

// byRule reports whether a rule of the tool's policy decided the round at
// intake, so no reviewer was asked.
func byRule(v cardView) bool {
	return v.Decision != nil && v.Decision.Via == approvals.ViaPolicy
}

// stillToAct lists the approvers who have not voted in the round: user
// groups stay listed (their other members may still act), users who voted
// or the request was made for drop out.
func stillToAct(approvers []string, votes []store.Vote, requestedFor string) []string {
	var out []string
	for _, id := range approvers {
		voted := slices.ContainsFunc(votes, func(v store.Vote) bool { return v.Voter == id })
		if !voted && id != requestedFor {
			out = append(out, id)
		}
	}
	return out
}

// effectText is the snapshot as pretty JSON in a code block, cut to fit a
// section; the full snapshot stays reachable with the slash command.
func effectText(req store.Request) string {
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, req.Snapshot, "", "  "); err != nil {
		pretty.Reset()
		pretty.Write(req.Snapshot)
	}
	text := escape(strings.ReplaceAll(pretty.String(), "```", "`\u200b`\u200b`"))
	note := ""
	if len(text) > maxEffectText {
		text = cut(text, maxEffectText)
		if i := strings.LastIndexByte(text, '\n'); i > maxEffectText/2 {
			text = text[:i+1] + "…"
		}
		note = fmt.Sprintf("\n_The effect is cut here (%d bytes in all); see it whole with_ `/countersign %s`", len(req.Snapshot), req.Key)
	}
	return "*Effect*\n```" + text + "```" + note
}

// statusText says where the round stands.
func statusText(v cardView) string {
	decided := ""
	if v.Decision != nil {
		decided = fmt.Sprintf(" by %s at %s", mention(v.Decision.DecidedBy), clock(v.Decision.DecidedAt))
		if g := v.Grant; g != nil && v.Decision.Via == approvals.ViaGrant {
			decided = fmt.Sprintf(" by standing grant `%s` of %s at %s", escape(g.ID), mention(g.Grantor), clock(v.Decision.DecidedAt))
		}
	}
	switch store.RequestStatus(v.State) {
	case store.RequestPending:
		return ":hourglass_flowing_sand: *Waiting for a decision.* Approving runs exactly the effect above, once."
	case store.RequestRejected:
		if byRule(v) {
			return ":x: *" + escape(capitalized(approvals.PolicyDecisionText(v.Request.Policy))) + "*. Nothing will run."
		}
		why := ""
		if v.Decision != nil && v.Decision.Reason != "" {
			why = "\n>" + escape(strings.ReplaceAll(v.Decision.Reason, "\n", " "))
		}
		return ":x: *Rejected*" + decided + ". Nothing will run." + why
	case store.RequestExpired:
		return ":hourglass: *Expired* at " + clock(v.Request.ExpiresAt) + " without a decision. Nothing will run."
	case store.RequestCancelled:
		return ":no_entry_sign: *Cancelled* by the agent at " + clock(v.Request.UpdatedAt) + ". Nothing will run."
	case store.RequestEdited:
		return ":pencil2: *Edited* by an approver at " + clock(v.Request.UpdatedAt) + " into request `" +
			approvals.ShortKey(v.Request.SupersededBy) + "`, which has its own card. This write will not run."
	}
	if v.State == "superseded" {
		return fmt.Sprintf(":leftwards_arrow_with_hook: *Superseded.* This round's approval can no longer run; it needs a new decision on the card for round %d.", v.Request.Round)
	}
	approved := ":white_check_mark: *Approved*" + decided + "."
	if byRule(v) {
		approved = ":white_check_mark: *Allowed by policy rule " + escape(v.Request.Policy.TierName) + "* — no review needed."
	}
	e := v.Execution
	if e == nil {
		return approved
	}
	code := ""
	if e.LastCode != nil && *e.LastCode != "" {
		code = " `" + escape(*e.LastCode) + "`"
	}
	switch e.State {
	case store.ExecReady:
		if e.Attempts == 0 {
			return approved + " Queued to run."
		}
		return fmt.Sprintf("%s Retrying under the same key: attempt %d of %d failed%s.", approved, e.Attempts, e.MaxAttempts, code)
	case store.ExecClaimed:
		return fmt.Sprintf("%s :gear: Running (attempt %d of %d).", approved, e.Attempts, e.MaxAttempts)
	case store.ExecSucceeded:
		ref := ""
		if e.ProviderRef != nil && *e.ProviderRef != "" {
			ref = " Provider reference `" + escape(*e.ProviderRef) + "`."
		}
		return fmt.Sprintf("%s :tada: *Succeeded* after %s.%s", approved, plural(e.Attempts, "attempt"), ref)
	case store.ExecFailed:
		return fmt.Sprintf("%s :warning: *Failed*%s: %s", approved, code, escape(lastError(e)))
	case store.ExecUnknown:
		return fmt.Sprintf("%s :grey_question: *Outcome unknown*%s; reconciling with the provider before anything is sent again.", approved, code)
	case store.ExecNeedsReview:
		return fmt.Sprintf("%s :raising_hand: *Needs review*%s: %s\nCheck the provider, then say what happened.", approved, code, escape(lastError(e)))
	case store.ExecSuperseded:
		return approved + " Superseded before it ran; a new decision is needed."
	}
	return approved + " Execution " + escape(string(e.State)) + "."
}

// actionsBlock is the buttons a card shows: approve and reject while
// pending, the resolution choices while a write needs review, nothing once
// the round is over.
func actionsBlock(v cardView) *slack.ActionBlock {
	if v.State == string(store.RequestPending) {
		val, _ := json.Marshal(decisionValue{RequestID: v.Request.ID, Round: v.Round, PayloadHash: v.Request.PayloadHash})
		approve := slack.NewButtonBlockElement(ActionApprove, string(val), plain("Approve")).WithStyle(slack.StylePrimary)
		if !v.Tool.Reversible {
			approve = approve.WithConfirm(slack.NewConfirmationBlockObject(
				plain("Approve an irreversible write?"),
				mrkdwn(cut("This cannot be undone: "+escape(v.Request.Summary), 300)),
				plain("Approve"), plain("Cancel")))
		}
		reject := slack.NewButtonBlockElement(ActionReject, string(val), plain("Reject")).WithStyle(slack.StyleDanger)
		if grant := grantButton(v); grant != nil {
			return slack.NewActionBlock("countersign_decide", approve, grant, reject)
		}
		return slack.NewActionBlock("countersign_decide", approve, reject)
	}
	if v.Execution != nil && v.Execution.State == store.ExecNeedsReview {
		val, _ := json.Marshal(resolveValue{RequestID: v.Request.ID, ExecutionID: v.Execution.ID})
		return slack.NewActionBlock("countersign_resolve",
			slack.NewButtonBlockElement(ActionMarkSucceeded, string(val), plain("It succeeded")).WithStyle(slack.StylePrimary),
			slack.NewButtonBlockElement(ActionMarkFailed, string(val), plain("It failed")),
			slack.NewButtonBlockElement(ActionResend, string(val), plain("Send again (same key)")).WithStyle(slack.StyleDanger))
	}
	return nil
}

// grantButton is "Approve + allow similar for <max_ttl>", on a tool that
// allows standing grants and a round that needs one approval; its
// confirmation says what the grant will let through.
func grantButton(v cardView) *slack.ButtonBlockElement {
	rule := v.Tool.Grants
	if rule == nil || rule.MaxTTL <= 0 || v.Request.Policy.Needed() != 1 {
		return nil
	}
	val, _ := json.Marshal(decisionValue{RequestID: v.Request.ID, Round: v.Round, PayloadHash: v.Request.PayloadHash,
		GrantSeconds: int64(rule.MaxTTL / time.Second)})
	ttl := approvals.DurationText(rule.MaxTTL)
	return slack.NewButtonBlockElement(ActionApproveGrant, string(val), plain("Approve + allow similar for "+ttl)).
		WithConfirm(slack.NewConfirmationBlockObject(plain("Allow similar writes for "+ttl+"?"),
			mrkdwn(cut(escape(approvals.GrantScope(v.Request, *rule)), 300)), plain("Approve and allow"), plain("Cancel")))
}

// threadText is the reply in a card's thread when its write failed or needs
// review, addressed to whoever approved it.
func threadText(v cardView, reason string) string {
	who := "approvers"
	if v.Decision != nil {
		who = mention(v.Decision.DecidedBy)
	}
	e := v.Execution
	code, msg := "", ""
	if e != nil {
		if e.LastCode != nil {
			code = " `" + escape(*e.LastCode) + "`"
		}
		msg = escape(lastError(e))
	}
	key := approvals.ShortKey(v.Request.Key)
	if reason == "needs_review" {
		return fmt.Sprintf("%s the write you approved (`%s`) needs review%s: %s\nCheck the provider, then use the buttons on the card.", who, key, code, msg)
	}
	return fmt.Sprintf("%s the write you approved (`%s`) failed%s: %s", who, key, code, msg)
}

func lastError(e *store.Execution) string {
	if e.LastError != nil && *e.LastError != "" {
		return cut(*e.LastError, 500)
	}
	return "no message"
}

func plain(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
}
func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

// escape makes agent-written text inert in mrkdwn: no mentions, no links.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// mention renders a Slack user id as a mention, and anything else as text.
func mention(id string) string {
	if id == "" {
		return "—"
	}
	if user, ok := slackID(id); ok && !user.IsGroup() {
		return "<@" + user.Value + ">"
	}
	return escape(id)
}

// approverMention renders an approver: a user or a user group (shown by
// Slack as @handle), or anything else (a local reviewer) as text.
func approverMention(id string) string {
	if group, ok := slackID(id); ok && group.IsGroup() {
		return "<!subteam^" + group.Value + ">"
	}
	return mention(id)
}

// slackDate shows a time in each reader's zone, with a UTC fallback.
func slackDate(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04 UTC"))
}

// clock shows a time in UTC, with its date unless it is today.
func clock(t time.Time) string {
	u := t.UTC()
	if u.Format(time.DateOnly) == time.Now().UTC().Format(time.DateOnly) {
		return u.Format("15:04 UTC")
	}
	return u.Format("2006-01-02 15:04 UTC")
}

func reversible(r bool) string {
	if r {
		return "yes"
	}
	return "*no* — it cannot be undone"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// capitalized is s with its first letter upper case.
func capitalized(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := n - len("…")
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "…"
}

// cardLink is a link to a card that works in any workspace the reader is in.
func cardLink(channel, ts string) string {
	if channel == "" || ts == "" {
		return ""
	}
	return "https://slack.com/archives/" + channel + "/p" + strings.ReplaceAll(ts, ".", "")
}
