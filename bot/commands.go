package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/countersign/countersign/store"
)

// Lookup limits.
const (
	maxMatches     = 5  // an ambiguous prefix or business id lists this many
	maxListed      = 10 // pending and unknown list this many
	maxTimeline    = 25 // events shown for one request
	maxAnswerBytes = 12000
)

// helpText answers /countersign help and anything it does not understand.
const helpText = "*countersign lookups* (only you see the answers)\n" +
	"• `/countersign wa_3fa9c2d1` — a key, or its first 8+ characters after `wa_` (the short form `wa_3fa9c2d1a…634c` works too)\n" +
	"• `/countersign inv_8841` — requests whose effect holds that exact value (an invoice, order or customer id), or a client-sent key\n" +
	"• `/countersign pending` — requests waiting for a decision\n" +
	"• `/countersign unknown` — writes whose outcome is unknown or that need a human\n" +
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
	q := ParseQuery(cmd.Text)
	b.metrics.Commands.WithLabelValues(string(q.Kind)).Inc()
	text, err := b.lookup(ctx, q)
	if err != nil {
		b.logger.Error("slash command lookup", slog.String("kind", string(q.Kind)), slog.String("error", err.Error()))
		text = "The lookup failed just now; please try again."
	}
	return commandAnswer{ResponseType: slack.ResponseTypeEphemeral, Text: cut(text, maxAnswerBytes)}
}

// lookup runs a query and renders the answer.
func (b *Bot) lookup(ctx context.Context, q Query) (string, error) {
	db := b.db
	switch q.Kind {
	case QueryHelp:
		if q.Note != "" {
			return q.Note + "\n\n" + helpText, nil
		}
		return helpText, nil
	case QueryPending:
		reqs, err := db.PendingRequests(ctx, maxListed)
		if err != nil {
			return "", err
		}
		if len(reqs) == 0 {
			return "Nothing is waiting for a decision.", nil
		}
		return "*Waiting for a decision* (soonest expiry first):\n" + listLines(reqs), nil
	case QueryUnknown:
		us, err := db.UnresolvedExecutions(ctx, maxListed)
		if err != nil {
			return "", err
		}
		if len(us) == 0 {
			return "No write is unknown or waiting for a human.", nil
		}
		var sb strings.Builder
		sb.WriteString("*Unknown or needing review:*\n")
		for _, u := range us {
			fmt.Fprintf(&sb, "• `%s` *%s* after %s%s · %s · %s\n", u.Request.Key, u.Execution.State, plural(u.Execution.Attempts, "attempt"),
				codeOf(u.Execution), escape(u.Request.Tool), escape(cut(u.Request.Summary, 80)))
		}
		return sb.String(), nil
	case QueryID:
		req, err := db.RequestByID(ctx, q.Value)
		if errors.Is(err, store.ErrNotFound) {
			return "No request has the id `" + q.Value + "`.", nil
		} else if err != nil {
			return "", err
		}
		return b.detail(ctx, req)
	case QueryKey:
		reqs, err := db.RequestsByKeyPrefix(ctx, q.Value, maxMatches+1)
		if err != nil {
			return "", err
		}
		if q.Suffix != "" {
			reqs = filterSuffix(reqs, q.Suffix)
		}
		if len(reqs) == 0 {
			return "No request has a key starting `" + escape(q.Value) + "`.", nil
		}
		return b.matches(ctx, reqs, "key starting `"+escape(q.Value)+"`")
	case QueryHexPrefix:
		reqs, err := db.RequestsByKeyPrefix(ctx, "wa_"+strings.ToLower(q.Value), maxMatches+1)
		if err != nil {
			return "", err
		}
		if len(reqs) > 0 {
			return b.matches(ctx, reqs, "key starting `wa_"+escape(strings.ToLower(q.Value))+"`")
		}
		return b.business(ctx, q.Value)
	case QueryBusiness:
		return b.business(ctx, q.Value)
	}
	return helpText, nil
}

// business finds requests by a client-sent key or a string in the effect.
func (b *Bot) business(ctx context.Context, value string) (string, error) {
	db := b.db
	if req, err := db.RequestByKey(ctx, value); err == nil {
		return b.detail(ctx, req)
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	reqs, err := db.RequestsByEffectString(ctx, value, maxMatches+1)
	if err != nil {
		return "", err
	}
	if len(reqs) == 0 {
		return "No request's effect holds `" + escape(value) + "`.\n\n" + helpText, nil
	}
	return b.matches(ctx, reqs, "effect holding `"+escape(value)+"`")
}

// matches shows one request in full, or lists several.
func (b *Bot) matches(ctx context.Context, reqs []store.Request, what string) (string, error) {
	if len(reqs) == 1 {
		return b.detail(ctx, reqs[0])
	}
	head := fmt.Sprintf("%d requests have a %s:\n", len(reqs), what)
	if len(reqs) > maxMatches {
		reqs = reqs[:maxMatches]
		head = fmt.Sprintf("More than %d requests have a %s; the first %d:\n", maxMatches, what, maxMatches)
	}
	return head + listLines(reqs) + "Type more of the key to see one in full.", nil
}

// detail is everything a support engineer needs about one request: the key,
// the state, the decision, every execution and attempt, the timeline and the
// card.
func (b *Bot) detail(ctx context.Context, req store.Request) (string, error) {
	db := b.db
	var sb strings.Builder
	summary := req.Summary
	if summary == "" {
		summary = req.Tool
	}
	fmt.Fprintf(&sb, "*%s*\nKey `%s`\n", escape(cut(summary, 200)), req.Key)
	fmt.Fprintf(&sb, "Status *%s* (round %d) · tool `%s` · run `%s` step `%s` · asked by %s for %s · created %s · expires %s\n",
		req.Status, req.Round, escape(req.Tool), escape(req.RunID), escape(string(req.Step)), escape(req.RequestedBy),
		mention(req.RequestedFor), clock(req.CreatedAt), clock(req.ExpiresAt))

	d, err := db.LatestDecision(ctx, req.ID)
	switch {
	case err == nil:
		fmt.Fprintf(&sb, "Decision: *%s* by %s at %s via %s (round %d)\n", d.Verdict, mention(d.DecidedBy), clock(d.DecidedAt), escape(d.Via), d.Round)
	case errors.Is(err, store.ErrNotFound):
		sb.WriteString("Decision: none yet\n")
	default:
		return "", err
	}
	execs, err := db.ExecutionsFor(ctx, req.ID)
	if err != nil {
		return "", err
	}
	if len(execs) == 0 {
		sb.WriteString("Execution: none\n")
	}
	for _, e := range execs {
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

	events, err := db.EventsFor(ctx, req.ID)
	if err != nil {
		return "", err
	}
	if len(events) > 0 {
		sb.WriteString("Timeline:\n")
		if len(events) > maxTimeline {
			fmt.Fprintf(&sb, "  … %d earlier events\n", len(events)-maxTimeline)
			events = events[len(events)-maxTimeline:]
		}
		for _, ev := range events {
			fmt.Fprintf(&sb, "  %s %s by %s%s\n", ev.At.UTC().Format("2006-01-02 15:04:05"), escape(ev.Kind), actor(ev.Actor), eventDetail(ev.Data))
		}
	}
	if link := cardLink(req.CardChannel, req.CardTS); link != "" {
		fmt.Fprintf(&sb, "<%s|Open the card>\n", link)
	} else {
		sb.WriteString("The card has not been posted yet.\n")
	}
	return sb.String(), nil
}

func listLines(reqs []store.Request) string {
	var sb strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&sb, "• `%s` *%s* · %s · %s · expires %s\n", r.Key, r.Status, escape(r.Tool), escape(cut(r.Summary, 80)), clock(r.ExpiresAt))
	}
	return sb.String()
}

func filterSuffix(reqs []store.Request, suffix string) []store.Request {
	out := reqs[:0:0]
	for _, r := range reqs {
		if strings.HasSuffix(r.Key, suffix) {
			out = append(out, r)
		}
	}
	return out
}

func codeOf(e store.Execution) string {
	if e.LastCode != nil && *e.LastCode != "" {
		return " · code `" + escape(*e.LastCode) + "`"
	}
	return ""
}

func actor(a string) string {
	if validUserID(a) {
		return mention(a)
	}
	return escape(a)
}

// eventDetail shows an event's small fields (verdict, code, state, …).
func eventDetail(data map[string]any) string {
	if len(data) == 0 {
		return ""
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		switch v := data[k].(type) {
		case string:
			if k == "payload_hash_seen" || k == "key" {
				continue
			}
			parts = append(parts, k+"="+escape(cut(v, 80)))
		case float64, bool:
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
