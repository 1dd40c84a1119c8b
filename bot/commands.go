package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store"
)

// Slack answer limits.
const (
	maxTimeline    = 25 // events shown for one request
	maxAnswerBytes = 12000
)

// helpText answers /countersign help and anything it does not understand.
const helpText = "*countersign lookups* (only you see the answers)\n" +
	"• `/countersign wa_3fa9c2d1` — a key, or its first 8+ characters after `wa_` (the short form `wa_3fa9c2d1a…634c` works too)\n" +
	"• `/countersign inv_8841` — requests whose effect holds that exact value (an invoice, order or customer id), or a client-sent key\n" +
	"• `/countersign pending` — requests waiting for a decision\n" +
	"• `/countersign unknown` — writes whose outcome is unknown or that need a human\n" +
	grantsHelp + "\n" +
	"• `/countersign help` — this text"

// Commands serves POST /slack/commands: the signed slash command, answered
// ephemerally in the response body.
func (b *Bot) Commands() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		defer func() { b.metrics.AckDuration.WithLabelValues("commands").Observe(time.Since(start).Seconds()) }()
		body, ok := b.readSigned(w, r)
		if !ok {
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			writeError(w, http.StatusBadRequest, "malformed", "the body is not a form")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), ackBudget)
		defer cancel()
		msg := b.command(ctx, slack.SlashCommand{
			Command: form.Get("command"), Text: form.Get("text"), UserID: form.Get("user_id"), ChannelID: form.Get("channel_id"),
		})
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(msg)
	})
}

// commandAnswer is an ephemeral slash-command response.
type commandAnswer struct {
	ResponseType string `json:"response_type"`
	Text         string `json:"text"`
}

// command answers one slash command from either transport.
func (b *Bot) command(ctx context.Context, cmd slack.SlashCommand) commandAnswer {
	// A reviewer's own grants are theirs to see, lookup access or not.
	if args := strings.Fields(cmd.Text); len(args) > 0 && args[0] == "grants" {
		b.metrics.Commands.WithLabelValues("grants").Inc()
		return commandAnswer{ResponseType: slack.ResponseTypeEphemeral, Text: cut(b.grantsCommand(ctx, cmd.UserID, args[1:]), maxAnswerBytes)}
	}
	q := lookup.Parse(cmd.Text)
	if q.Kind != lookup.QueryHelp {
		allowed, err := b.mayLookUp(ctx, cmd.UserID, cmd.ChannelID)
		if err != nil {
			b.logger.Error("slash command access check", slog.String("user", cmd.UserID), slog.String("error", err.Error()))
			return commandAnswer{ResponseType: slack.ResponseTypeEphemeral, Text: "countersign could not check who may look requests up just now; please try again."}
		}
		if !allowed {
			b.metrics.Commands.WithLabelValues(refusedKind).Inc()
			b.logger.Warn("slash command lookup refused", slog.String("user", cmd.UserID),
				slog.String("channel", cmd.ChannelID), slog.String("kind", string(q.Kind)))
			return commandAnswer{ResponseType: slack.ResponseTypeEphemeral, Text: refusedLookupText}
		}
	}
	b.metrics.Commands.WithLabelValues(string(q.Kind)).Inc()
	text := ""
	answer, err := b.lookup.Run(ctx, q)
	if err != nil {
		_, text = b.refused("slash command lookup", err, slog.String("kind", string(q.Kind)))
	} else {
		text = LookupText(answer)
	}
	return commandAnswer{ResponseType: slack.ResponseTypeEphemeral, Text: cut(text, maxAnswerBytes)}
}

// LookupText renders a lookup answer as the slash command's mrkdwn.
func LookupText(a lookup.Answer) string {
	switch a.Kind {
	case lookup.AnswerHelp:
		if a.Note != "" {
			return a.Note + "\n\n" + helpText
		}
		return helpText
	case lookup.AnswerPending:
		if len(a.Requests) == 0 {
			return "Nothing is waiting for a decision."
		}
		return "*Waiting for a decision* (soonest expiry first):\n" + listLines(a.Requests)
	case lookup.AnswerUnresolved:
		if len(a.Unresolved) == 0 {
			return "No write is unknown or waiting for a human."
		}
		var sb strings.Builder
		sb.WriteString("*Unknown or needing review:*\n")
		for _, u := range a.Unresolved {
			fmt.Fprintf(&sb, "• `%s` *%s* after %s%s · %s · %s\n", u.Request.Key, u.Execution.State, plural(u.Execution.Attempts, "attempt"),
				codeOf(u.Execution), escape(u.Request.Tool), escape(cut(u.Request.Summary, 80)))
		}
		return sb.String()
	case lookup.AnswerNone:
		switch a.Match {
		case lookup.MatchID:
			return "No request has the id `" + escape(a.Value) + "`."
		case lookup.MatchKeyPrefix:
			return "No request has a key starting `" + escape(a.Value) + "`."
		}
		return "No request's effect holds `" + escape(a.Value) + "`.\n\n" + helpText
	case lookup.AnswerMatches:
		what := "key starting `" + escape(a.Value) + "`"
		if a.Match == lookup.MatchEffect {
			what = "effect holding `" + escape(a.Value) + "`"
		}
		head := fmt.Sprintf("%d requests have a %s:\n", len(a.Requests), what)
		if a.More {
			head = fmt.Sprintf("More than %d requests have a %s; the first %d:\n", lookup.MaxMatches, what, lookup.MaxMatches)
		}
		return head + listLines(a.Requests) + "Type more of the key to see one in full."
	case lookup.AnswerDetail:
		return detailText(*a.Detail)
	}
	return helpText
}

// detailText is everything a support engineer needs about one request: the
// key, the state, the decision, every execution and attempt, the timeline and
// the card.
func detailText(d lookup.Detail) string {
	req := d.Request
	var sb strings.Builder
	summary := req.Summary
	if summary == "" {
		summary = req.Tool
	}
	fmt.Fprintf(&sb, "*%s*\nKey `%s`\n", escape(cut(summary, 200)), req.Key)
	fmt.Fprintf(&sb, "Status *%s* (round %d) · tool `%s` · run `%s` step `%s` · asked by %s for %s · created %s · expires %s\n",
		d.Outcome(), req.Round, escape(req.Tool), escape(req.RunID), escape(string(req.Step)), escape(req.RequestedBy),
		mention(req.RequestedFor), clock(req.CreatedAt), clock(req.ExpiresAt))

	if p := req.Policy; p.Version != "" {
		fmt.Fprintf(&sb, "Policy: %s\n", ruleText(p))
	}
	if dec := d.Decision; dec != nil {
		fmt.Fprintf(&sb, "Decision: *%s* by %s at %s via %s (round %d)", dec.Verdict, mention(dec.DecidedBy), clock(dec.DecidedAt), escape(dec.Via), dec.Round)
		byRule := dec.Via == approvals.ViaPolicy
		if byRule {
			// The rule's words carry a denial's message: no Reason line.
			fmt.Fprintf(&sb, ": %s", escape(strings.ReplaceAll(approvals.PolicyDecisionText(req.Policy), "\n", " ")))
		}
		sb.WriteString("\n")
		if dec.Reason != "" && !byRule {
			fmt.Fprintf(&sb, "Reason: %s\n", escape(strings.ReplaceAll(dec.Reason, "\n", " ")))
		}
	} else {
		sb.WriteString("Decision: none yet\n")
	}
	if len(d.Executions) == 0 {
		sb.WriteString("Execution: none\n")
	}
	for _, e := range d.Executions {
		fmt.Fprintf(&sb, "Execution #%d: *%s* · %s of %d%s", e.ID, e.State, plural(e.Attempts, "attempt"), e.MaxAttempts, codeOf(e))
		if e.ResponseStatus != nil {
			fmt.Fprintf(&sb, " · HTTP %d", *e.ResponseStatus)
		}
		if e.ProviderRef != nil && *e.ProviderRef != "" {
			fmt.Fprintf(&sb, " · provider ref `%s`", escape(*e.ProviderRef))
		}
		if e.LastError != nil && *e.LastError != "" && e.State != store.ExecSucceeded {
			fmt.Fprintf(&sb, " · %s", escape(cut(*e.LastError, 200)))
		}
		sb.WriteString("\n")
	}

	events := d.Events
	if len(events) > 0 {
		sb.WriteString("Timeline:\n")
		if len(events) > maxTimeline {
			fmt.Fprintf(&sb, "  … %d earlier events\n", len(events)-maxTimeline)
			events = events[len(events)-maxTimeline:]
		}
		for _, ev := range events {
			fmt.Fprintf(&sb, "  %s %s by %s%s\n", ev.At.UTC().Format("2006-01-02 15:04:05"), escape(string(ev.Kind)), actor(ev.Actor), eventDetail(ev.Data))
		}
	}
	if link := slackCardLink(req); link != "" {
		fmt.Fprintf(&sb, "<%s|Open the card>\n", link)
	} else {
		sb.WriteString("The card has not been posted yet.\n")
	}
	return sb.String()
}

func listLines(reqs []store.Request) string {
	var sb strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&sb, "• `%s` *%s* · %s · %s · expires %s\n", r.Key, r.Status, escape(r.Tool), escape(cut(r.Summary, 80)), clock(r.ExpiresAt))
	}
	return sb.String()
}

func codeOf(e store.Execution) string {
	if e.LastCode != nil && *e.LastCode != "" {
		return " · code `" + escape(*e.LastCode) + "`"
	}
	return ""
}

func actor(a string) string {
	if user, ok := slackID(a); ok && !user.IsGroup() {
		return mention(a)
	}
	return escape(a)
}

// eventDetail shows an event's small fields (verdict, code, state, …).
func eventDetail(data map[string]any) string {
	fields := lookup.EventFields(data)
	if len(fields) == 0 {
		return ""
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.Name + "=" + escape(cut(f.Value, 80))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// slackCardLink links the request's card when it is Slack's.
func slackCardLink(req store.Request) string {
	if req.CardSurface != SurfaceName {
		return ""
	}
	return cardLink(splitRef(req.CardRef))
}
