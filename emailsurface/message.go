package emailsurface

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/mail"
	"strings"
	"time"
	"unicode"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// LinkPath is where the links point, below Config.LinkBase: a GET shows the
// confirmation page, its POST decides.
const LinkPath = "/email/links/"

// maxEffect is how much of an effect a message or a page shows.
const maxEffect = 16 << 10

// linkURL is a link to token.
func (e *Email) linkURL(token string) string { return e.cfg.LinkBase + LinkPath + token }

// cardMessage is the message asking rcpt to review v's round.
func (e *Email) cardMessage(v surface.View, rcpt, msgID string, exp time.Time) []byte {
	req := v.Request
	l := link{RequestID: req.ID, Round: v.Round, PayloadHash: req.PayloadHash, Expires: exp}
	l.Verdict = store.VerdictApprove
	approve := e.linkURL(e.keys.issue(l, rcpt))
	l.Verdict = store.VerdictReject
	reject := e.linkURL(e.keys.issue(l, rcpt))

	var b strings.Builder
	fmt.Fprintf(&b, "%s asks to run %s.\n\n", oneLine(req.RequestedBy), oneLine(req.Tool))
	writeRequest(&b, req)
	writeChange(&b, v)
	if n := req.Policy.Approvals; n > 1 {
		fmt.Fprintf(&b, "It needs %d approvals.\n", n)
	}
	fmt.Fprintf(&b, "Waiting for a decision until %s. Approving runs exactly the effect above, once.\n\n", clock(req.ExpiresAt))
	fmt.Fprintf(&b, "Approve:\n%s\n\nReject:\n%s\n\n", approve, reject)
	fmt.Fprintf(&b, "Each link opens a page that asks for the address this message was sent to; only that page's button decides. "+
		"The links work once, for this round of this request only, until %s. Do not forward this message.\n", clock(exp))
	subject := fmt.Sprintf("Review: %s %s: %s", req.Tool, approvals.ShortKey(req.Key), req.Summary)
	return e.message(rcpt, msgID, "", subject, b.String())
}

// decidedMessage tells rcpt how v's round ended, in the card's thread.
func (e *Email) decidedMessage(v surface.View, ref, rcpt, msgID string) []byte {
	req := v.Request
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", outcome(v))
	writeRequest(&b, req)
	b.WriteString("The links in the first message decide nothing any more.\n")
	subject := fmt.Sprintf("Decided: %s %s: %s", req.Tool, approvals.ShortKey(req.Key), req.Summary)
	return e.message(rcpt, msgID, e.messageID("card", ref, rcpt), subject, b.String())
}

// replyMessage is a reminder, an escalation, or word of the write's
// failure, in the card's thread.
func (e *Email) replyMessage(r surface.Reply, ref, rcpt, msgID string) []byte {
	req := r.View.Request
	var b strings.Builder
	prefix := "Update"
	if kind, ok := r.Nudge(); ok {
		prefix = "Reminder"
		if kind == store.NudgeEscalation {
			prefix = "Escalation"
		}
		fmt.Fprintf(&b, "This request has waited since %s and is still pending; it expires at %s. "+
			"Use the links in the first message to decide.\n\n", clock(req.RoundStartedAt), clock(req.ExpiresAt))
	} else {
		reason, _ := r.Row.Data["reason"].(string)
		fmt.Fprintf(&b, "%s\n", outcome(r.View))
		if reason != "" {
			fmt.Fprintf(&b, "(%s)\n", oneLine(reason))
		}
		b.WriteString("\n")
	}
	writeRequest(&b, req)
	subject := fmt.Sprintf("%s: %s %s: %s", prefix, req.Tool, approvals.ShortKey(req.Key), req.Summary)
	return e.message(rcpt, msgID, e.messageID("card", ref, rcpt), subject, b.String())
}

// outcome words where v's round stands.
func outcome(v surface.View) string {
	if d := v.Decision; d != nil {
		s := fmt.Sprintf("%s by %s at %s.", pastOf(d.Verdict), d.DecidedBy, clock(d.DecidedAt))
		if e := v.Execution; e != nil {
			s += fmt.Sprintf(" The write is %s.", e.State)
		}
		return s
	}
	if v.State == "superseded" {
		return "Superseded: the agent asked again with a changed write; a new message asks for it."
	}
	return fmt.Sprintf("The request is %s.", v.State)
}

func pastOf(v store.Verdict) string {
	if v == store.VerdictReject {
		return "Rejected"
	}
	return "Approved"
}

// writeRequest writes what the write is: its summary, effect and key.
func writeRequest(b *strings.Builder, req store.Request) {
	if req.Summary != "" {
		fmt.Fprintf(b, "%s\n\n", oneLine(req.Summary))
	}
	fmt.Fprintf(b, "Effect:\n%s\n\n", effectText(req.Snapshot))
	fmt.Fprintf(b, "Key: %s\nAsked by: %s\n", approvals.ShortKey(req.Key), oneLine(req.RequestedBy))
	if req.RequestedFor != "" {
		fmt.Fprintf(b, "For: %s\n", oneLine(req.RequestedFor))
	}
	if req.Reason != "" {
		fmt.Fprintf(b, "Why: %s\n", oneLine(req.Reason))
	}
	b.WriteString("\n")
}

// effectText is the effect as indented JSON, cut to maxEffect.
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
	return s
}

// oneLine is s without control characters, so an agent's words cannot
// start a header or fake a line of the message.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

func clock(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// message is a message to rcpt, its body as plain text and the same as
// HTML (writeBody); inReplyTo threads it.
func (e *Email) message(rcpt, msgID, inReplyTo, subject, body string) []byte {
	subject = oneLine(subject)
	if r := []rune(subject); len(r) > 150 {
		subject = string(r[:150]) + "…"
	}
	var b bytes.Buffer
	h := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	h("From", e.from.String())
	h("To", (&mail.Address{Address: rcpt}).String())
	h("Subject", mime.QEncoding.Encode("utf-8", subject))
	h("Date", e.now().UTC().Format(time.RFC1123Z))
	h("Message-ID", msgID)
	if inReplyTo != "" {
		h("In-Reply-To", inReplyTo)
		h("References", inReplyTo)
	}
	h("Auto-Submitted", "auto-generated")
	h("MIME-Version", "1.0")
	writeBody(&b, e.cfg.LinkBase, body)
	return b.Bytes()
}
