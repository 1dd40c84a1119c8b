package teamssurface

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/misleading"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// CardType is the content type of an Adaptive Card attachment and of an
// invoke response carrying one.
const CardType = "application/vnd.microsoft.card.adaptive"

// maxEffect is how much of an effect a card shows.
const maxEffect = 8 << 10

// Action is what an approve or reject button carries (Action.Execute's
// data), and what an invoke names.
type Action struct {
	RequestID   string        `json:"request_id"`
	Round       int           `json:"round"`
	PayloadHash string        `json:"payload_hash"`
	Verdict     store.Verdict `json:"verdict"`
	Reason      string        `json:"reason,omitempty"` // the card's reason input, merged in by Teams
}

type object = map[string]any

func text(s string, extra object) object {
	o := object{"type": "TextBlock", "text": s, "wrap": true}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// card is the Adaptive Card showing v: the write, where its round stands,
// and, while it is pending, the approve and reject buttons. note, when
// set, is said first (why a click decided nothing).
func card(v surface.View, note string) object {
	req := v.Request
	var body []any
	if note != "" {
		body = append(body, text(plain(note), object{"color": "Attention", "weight": "Bolder"}))
	}
	body = append(body,
		text(fmt.Sprintf("%s asks to run %s", plain(req.RequestedBy), plain(req.Tool)), object{"size": "Medium", "weight": "Bolder"}))
	if req.Summary != "" {
		body = append(body, text(plain(req.Summary), nil))
	}
	facts := []any{
		object{"title": "Key", "value": approvals.ShortKey(req.Key)},
		object{"title": "Round", "value": fmt.Sprint(v.Round)},
	}
	if req.RequestedFor != "" {
		facts = append(facts, object{"title": "For", "value": plain(req.RequestedFor)})
	}
	if req.Reason != "" {
		facts = append(facts, object{"title": "Why", "value": plain(req.Reason)})
	}
	if n := req.Policy.Approvals; n > 1 {
		facts = append(facts, object{"title": "Needs", "value": approvals.Progress(req.Policy, v.Votes)})
	}
	body = append(body, object{"type": "FactSet", "facts": facts},
		text(effectText(req.Snapshot), object{"fontType": "Monospace"}))
	if found := misleading.Find(req.Snapshot); len(found) > 0 {
		lines := make([]string, len(found))
		for i, f := range found {
			lines[i] = "- " + plain(f.String())
		}
		body = append(body, text("Check the text:\n"+strings.Join(lines, "\n"), object{"color": "Warning"}))
	}
	body = append(body, changeBody(v)...)
	pending := v.Decision == nil && v.State == string(store.RequestPending)
	if !pending {
		body = append(body, text(Outcome(v), object{"weight": "Bolder", "color": outcomeColor(v)}))
	} else {
		body = append(body, text(fmt.Sprintf("Waiting for a decision until %s. Approving runs exactly the effect above, once.", clock(req.ExpiresAt)), object{"isSubtle": true}))
	}
	c := object{
		"type":    "AdaptiveCard",
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
		"version": "1.4",
		"body":    body,
	}
	if pending {
		if v.Tool.RejectReason.AsksReason() {
			label := "Why (optional, with reject)"
			if v.Tool.RejectReason == approvals.ReasonRequired {
				label = "Why (required to reject)"
			}
			body = append(body, object{"type": "Input.Text", "id": "reason", "label": label, "isMultiline": true, "maxLength": 2000})
			c["body"] = body
		}
		c["actions"] = []any{button(v, store.VerdictApprove), button(v, store.VerdictReject)}
	}
	return c
}

func button(v surface.View, verdict store.Verdict) object {
	title, style := "Approve", "positive"
	if verdict == store.VerdictReject {
		title, style = "Reject", "destructive"
	}
	return object{
		"type": "Action.Execute", "title": title, "verb": string(verdict), "style": style,
		"data": Action{RequestID: v.Request.ID, Round: v.Round, PayloadHash: v.Request.PayloadHash, Verdict: verdict},
	}
}

// Outcome words where v's round stands once it is no longer pending.
func Outcome(v surface.View) string {
	if d := v.Decision; d != nil {
		past := "Approved"
		if d.Verdict == store.VerdictReject {
			past = "Rejected"
		}
		s := fmt.Sprintf("%s by %s via %s at %s.", past, plain(d.DecidedBy), plain(d.Via), clock(d.DecidedAt))
		if d.Reason != "" {
			s += " Why: " + plain(d.Reason)
		}
		if e := v.Execution; e != nil {
			s += fmt.Sprintf(" The write is %s.", e.State)
		}
		return s
	}
	if v.State == "superseded" {
		return "Superseded: the agent asked again with a changed write; a new card asks for it."
	}
	return fmt.Sprintf("The request is %s.", v.State)
}

func outcomeColor(v surface.View) string {
	if v.Decision != nil && v.Decision.Verdict == store.VerdictApprove {
		return "Good"
	}
	return "Attention"
}

// effectText is the effect as indented JSON in a code fence, cut to
// maxEffect.
func effectText(snapshot []byte) string {
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, snapshot, "", "  "); err != nil {
		pretty.Reset()
		pretty.Write(snapshot)
	}
	s := strings.ToValidUTF8(pretty.String(), "?")
	if len(s) > maxEffect {
		s = strings.ToValidUTF8(s[:maxEffect], "") + fmt.Sprintf("\n… (cut: %d bytes in all)", len(snapshot))
	}
	return "```\n" + strings.ReplaceAll(s, "```", "` ` `") + "\n```"
}

// plain is s without control characters (one line) and with the Markdown
// that TextBlocks read escaped, so an agent's words cannot format or fake
// a line of the card.
func plain(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	var b strings.Builder
	for i, r := range s {
		if strings.ContainsRune("\\`*_[]~<>", r) || (i == 0 && (strings.ContainsRune("-+#|", r) || unicode.IsDigit(r))) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func clock(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// message is an activity showing a card.
func message(c object) object {
	return object{"type": "message", "attachments": []any{object{"contentType": CardType, "content": c}}}
}
