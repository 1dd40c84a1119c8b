package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// click is one button press, as much of Slack's block_actions payload as a
// decision or resolution needs.
type click struct {
	User     string
	Channel  string
	ActionID string
	Decision decisionValue // for approve and reject
	Resolve  resolveValue  // for the needs-review actions
	// TriggerID lets the click open a modal (the reject reason form).
	TriggerID string
}

// ackBudget bounds the work before Slack gets its answer: Slack gives up
// after 3 seconds.
const ackBudget = 2500 * time.Millisecond

// errIgnored is an interaction countersign has nothing to do with.
var errIgnored = errors.New("not a countersign button")

// interactionPayload is the part of Slack's payload parseClick reads.
type interactionPayload struct {
	Type string `json:"type"`
	User struct {
		ID string `json:"id"`
	} `json:"user"`
	Channel struct {
		ID string `json:"id"`
	} `json:"channel"`
	Container struct {
		ChannelID string `json:"channel_id"`
	} `json:"container"`
	Actions []struct {
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
	} `json:"actions"`
	TriggerID string `json:"trigger_id"`
}

// parseClick reads a block_actions payload (the JSON in the form field
// "payload", or a Socket Mode envelope's payload).
func parseClick(payload []byte) (click, error) {
	var p interactionPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return click{}, fmt.Errorf("malformed interaction payload: %w", err)
	}
	if p.Type != string(slack.InteractionTypeBlockActions) || len(p.Actions) == 0 {
		return click{}, errIgnored
	}
	c := click{User: p.User.ID, Channel: p.Channel.ID, ActionID: p.Actions[0].ActionID, TriggerID: p.TriggerID}
	if c.Channel == "" {
		c.Channel = p.Container.ChannelID
	}
	if c.User == "" {
		return click{}, errors.New("interaction without a user")
	}
	value := []byte(p.Actions[0].Value)
	switch c.ActionID {
	case ActionApprove, ActionReject, ActionApproveGrant:
		if err := json.Unmarshal(value, &c.Decision); err != nil || c.Decision.RequestID == "" || c.Decision.Round < 1 || c.Decision.PayloadHash == "" {
			return click{}, errors.New("malformed decision button value")
		}
		if (c.ActionID == ActionApproveGrant) != (c.Decision.GrantSeconds > 0) {
			return click{}, errors.New("malformed decision button value")
		}
	case ActionMarkSucceeded, ActionMarkFailed, ActionResend:
		if err := json.Unmarshal(value, &c.Resolve); err != nil || c.Resolve.RequestID == "" || c.Resolve.ExecutionID < 1 {
			return click{}, errors.New("malformed resolution button value")
		}
	default:
		return click{}, errIgnored
	}
	return c, nil
}

// Interactions serves POST /slack/interactions. The decision is recorded
// before Slack gets its 200; the clicker's answer follows as an ephemeral
// message, and the card update goes through the outbox.
func (b *Bot) Interactions() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		defer func() { b.metrics.AckDuration.WithLabelValues("interactions").Observe(time.Since(start).Seconds()) }()
		body, ok := b.readSigned(w, r)
		if !ok {
			b.metrics.Interactions.WithLabelValues("unauthorized").Inc()
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			b.metrics.Interactions.WithLabelValues("malformed").Inc()
			writeError(w, http.StatusBadRequest, "malformed", "the body is not a form")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), ackBudget)
		defer cancel()
		if response := b.interact(ctx, []byte(form.Get("payload"))); response != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(response)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// interact handles one interaction payload from either transport and
// returns the body of Slack's acknowledgement, nil for an empty one.
func (b *Bot) interact(ctx context.Context, payload []byte) (response []byte) {
	var kind struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(payload, &kind) == nil && kind.Type == string(slack.InteractionTypeViewSubmission) {
		outcome, response := b.submitReject(ctx, payload)
		b.metrics.Interactions.WithLabelValues(outcome).Inc()
		return response
	}
	c, err := parseClick(payload)
	if err != nil {
		outcome := "malformed"
		if errors.Is(err, errIgnored) {
			outcome = "ignored"
		}
		b.metrics.Interactions.WithLabelValues(outcome).Inc()
		return nil
	}
	var outcome, answer string
	refused := false
	if c.ActionID == ActionApprove || c.ActionID == ActionReject || c.ActionID == ActionApproveGrant {
		outcome, answer, refused = b.elsewhere(ctx, c.Decision.RequestID)
	}
	switch {
	case refused:
	case c.ActionID == ActionReject && b.asksReason(ctx, c):
		outcome, answer = b.openRejectModal(ctx, c)
	case c.ActionID == ActionApprove, c.ActionID == ActionReject, c.ActionID == ActionApproveGrant:
		outcome, answer = b.decide(ctx, c)
	default:
		outcome, answer = b.resolve(ctx, c)
	}
	b.metrics.Interactions.WithLabelValues(outcome).Inc()
	if answer != "" {
		b.answer(c.Channel, c.User, answer)
	}
	return nil
}

// decide records a verdict and says what happened, in words for the clicker.
func (b *Bot) decide(ctx context.Context, c click) (outcome, answer string) {
	verdict := store.VerdictApprove
	if c.ActionID == ActionReject {
		verdict = store.VerdictReject
	}
	d := approvals.Decision{
		RequestID: c.Decision.RequestID, Round: c.Decision.Round, PayloadHash: c.Decision.PayloadHash,
		Verdict: verdict, DecidedBy: c.User, Via: Via, Grant: time.Duration(c.Decision.GrantSeconds) * time.Second,
	}
	// Identical deliveries of one click in flight on this replica (Slack's
	// retries, double clicks) share one call; the database still decides
	// between replicas and between different clicks.
	leader := false
	key := strings.Join([]string{d.RequestID, strconv.Itoa(d.Round), d.PayloadHash, d.DecidedBy, string(d.Verdict), d.Grant.String()}, "|")
	v, err, _ := b.clicks.Do(key, func() (any, error) {
		leader = true
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackBudget)
		defer cancel()
		return b.review.Decide(ctx, d)
	})
	out, _ := v.(approvals.Outcome)
	if !leader {
		out.Created = false // the leader's click recorded it; this one finds it
	}
	if err == nil && !leader && !out.Created && out.Counted {
		out.Counted, out.Repeat = false, true // as above: the leader's click counted it
	}
	if err == nil && out.Err() == nil {
		return voteAnswer(out)
	}
	if err == nil {
		err = out.Err()
	}
	return b.refused("recording a decision", err, slog.String("request_id", c.Decision.RequestID))
}

// voteAnswer tells a reviewer what their vote did, as the outcome label and
// the words of their ephemeral answer.
func voteAnswer(out approvals.Outcome) (outcome, answer string) {
	key := approvals.ShortKey(out.Request.Key)
	past := "approved"
	if out.Vote.Verdict == store.VerdictReject {
		past = "rejected"
	}
	switch {
	case out.Created && out.Grant != nil:
		g := out.Grant
		return "created", fmt.Sprintf("You approved `%s` and allowed similar writes until %s: %s (grant `%s`; `/countersign grants revoke %s` ends it). The card will follow the write.",
			key, clock(g.ExpiresAt), escape(approvals.GrantText(*g)), g.ID, g.ID)
	case out.Created:
		if out.Request.Policy.Needed() > 1 && out.Vote.Verdict == store.VerdictApprove {
			return "created", fmt.Sprintf("You approved `%s`: %s. The card will follow the write.", key, approvals.Progress(out.Request.Policy, out.Votes))
		}
		return "created", fmt.Sprintf("You %s `%s`. The card will follow the write.", past, key)
	case out.Counted:
		return "counted", fmt.Sprintf("You approved `%s`. %s.", key, approvals.Progress(out.Request.Policy, out.Votes))
	default:
		return "repeat", fmt.Sprintf("You already %s `%s`; nothing changed. %s.", past, key, approvals.Progress(out.Request.Policy, out.Votes))
	}
}

// resolve passes a needs-review choice to the executor after checking that
// the clicker may resolve it, by the rule an approval follows.
func (b *Bot) resolve(ctx context.Context, c click) (outcome, answer string) {
	if b.resolver == nil {
		return "no_resolver", "Resolution is not available on this server; ask an operator."
	}
	req, err := b.review.AuthorizeResolution(ctx, approvals.Resolution{
		RequestID: c.Resolve.RequestID, ExecutionID: c.Resolve.ExecutionID, Action: c.ActionID, By: c.User, Via: Via,
	})
	if err != nil {
		return b.refused("authorizing a resolution", err, slog.String("request_id", c.Resolve.RequestID))
	}
	if err := b.resolver.Resolve(ctx, req.ID, c.Resolve.ExecutionID, c.ActionID, c.User); err != nil {
		if alreadyResolved(err) {
			err = fmt.Errorf("%w: %w", approvals.ErrAlreadyResolved, err)
		}
		return b.refused("resolving an execution", err, slog.String("key", req.Key))
	}
	b.logger.Info("execution resolved", slog.String("key", req.Key), slog.String("action", c.ActionID), slog.String("by", c.User))
	return "resolved", "Recorded. The card will follow the write."
}

// refused words err as its refusal for the person who clicked or typed, and
// returns the refusal's code as the outcome. A store out of reach or an
// unknown failure is logged first; the words never carry an error's text.
func (b *Bot) refused(doing string, err error, attrs ...any) (outcome, text string) {
	ref := approvals.RefusalFor(err)
	switch ref.Code {
	case approvals.CodeUnavailable:
		b.logger.Warn(doing+": database unavailable", append(attrs, slog.String("error", err.Error()))...)
	case approvals.CodeInternal:
		b.logger.Error(doing, append(attrs, slog.String("error", err.Error()))...)
	}
	return ref.Code, refusalText(ref)
}

// refusalText is a refusal's words as mrkdwn: the person it names as a
// mention, the rest escaped.
func refusalText(ref approvals.Refusal) string {
	text := escape(ref.Message)
	if ref.By != "" {
		text = strings.Replace(text, escape(ref.By), mention(ref.By), 1)
	}
	return text
}

// answer sends an ephemeral message to the clicker after Slack has its
// acknowledgement, as work the bot's Stop waits for. Answers are best
// effort: the card is the record, and none is sent once Stop has begun.
func (b *Bot) answer(channel, user, text string) {
	if channel == "" || user == "" || b.slack == nil {
		return
	}
	work, leave, err := b.Enter(context.Background())
	if err != nil {
		return
	}
	b.answers.Add(1)
	go func() {
		defer leave()
		defer b.answers.Done()
		b.answerSem <- struct{}{}
		defer func() { <-b.answerSem }()
		ctx, cancel := context.WithTimeout(work, 10*time.Second)
		defer cancel()
		if _, err := b.slack.PostEphemeralContext(ctx, channel, user, slack.MsgOptionText(text, false)); err != nil {
			b.logger.Warn("answering a click", slog.String("channel", channel), slog.String("user", user), slog.String("error", err.Error()))
		}
	}()
}
