package bot

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/countersign/countersign/delivery"
	"github.com/countersign/countersign/internal/mutant"
	"github.com/countersign/countersign/internal/outbound"
	"github.com/countersign/countersign/surface"
)

// SurfaceName is Slack's name in the ledger: its outbox rows, cards and
// pacing lanes.
const SurfaceName = "slack"

const (
	historyPageLimit = 200
	historyPages     = 3
)

// transientErrors are Slack error codes worth retrying; every other ok:false
// answer (channel_not_found, not_in_channel, invalid_auth, …) will not change
// with a retry, so the row is failed with the code and the error is logged.
var transientErrors = []string{"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}

// DeliverOnce claims due outbox rows and delivers them: one goroutine per
// channel, rows of a channel in order and spaced by the post interval. It
// returns how many rows it claimed. Errors of single rows are recorded on the
// rows; the returned error is only for the claim itself.
func (b *Bot) DeliverOnce(ctx context.Context) (int, error) { return b.delivery.RunOnce(ctx) }

// Surface is Slack as a review surface: a card is a message in the tool's
// channel, its ref "channel/ts", its thread the message's.
func (b *Bot) Surface() surface.Adapter { return slackSurface{b} }

// slackSurface is the Slack adapter of the surface port.
type slackSurface struct{ b *Bot }

func (s slackSurface) Name() string { return SurfaceName }

func (s slackSurface) Destination(tool string) string { return s.b.toolChannel(tool) }

func (s slackSurface) DestinationOf(ref string) string {
	channel, _ := splitRef(ref)
	return channel
}

// slackRef is a card's ref: its channel and ts.
func slackRef(channel, ts string) string { return channel + "/" + ts }

func splitRef(ref string) (channel, ts string) {
	channel, ts, _ = strings.Cut(ref, "/")
	return channel, ts
}

// Post posts a card with its metadata (event_type countersign_card, the key
// and the round), by which Find finds it again.
func (s slackSurface) Post(ctx context.Context, channel string, v surface.View) (string, error) {
	text, blocks := renderCard(v)
	meta := cardMetadata(v.Request, v.Round)
	posted, ts, err := s.b.slack.PostMessageContext(ctx, channel,
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(meta))
	if err != nil {
		return "", err
	}
	if mutant.Every("card-twice", 4) { // planted bug: the card posted twice
		_, _, _ = s.b.slack.PostMessageContext(ctx, channel, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(meta))
	}
	if posted == "" {
		posted = channel
	}
	return slackRef(posted, ts), nil
}

// Find looks for the round's card in the channel's recent history by its
// metadata.
func (s slackSurface) Find(ctx context.Context, channel string, v surface.View, since time.Time) (string, error) {
	params := &slack.GetConversationHistoryParameters{
		ChannelID: channel, Limit: historyPageLimit, IncludeAllMetadata: true,
		// Nothing older than the request round can be its card.
		Oldest: strconv.FormatInt(since.Add(-time.Minute).Unix(), 10),
	}
	for range historyPages {
		hist, err := s.b.slack.GetConversationHistoryContext(ctx, params)
		if err != nil {
			return "", err
		}
		for _, m := range hist.Messages {
			if isCard(m.Metadata, v.Request.Key, v.Round) {
				return slackRef(channel, m.Timestamp), nil
			}
		}
		if !hist.HasMore || hist.ResponseMetaData.NextCursor == "" {
			break
		}
		params.Cursor = hist.ResponseMetaData.NextCursor
	}
	return "", nil
}

func isCard(md slack.SlackMetadata, key string, round int) bool {
	if md.EventType != CardEventType {
		return false
	}
	if k, _ := md.EventPayload["key"].(string); k != key {
		return false
	}
	switch r := md.EventPayload["round"].(type) {
	case float64:
		return int(r) == round
	case string:
		return r == strconv.Itoa(round)
	}
	return false
}

// Update re-renders the card; a message someone deleted is surface.ErrCardGone.
func (s slackSurface) Update(ctx context.Context, ref string, v surface.View) error {
	channel, ts := splitRef(ref)
	text, blocks := renderCard(v)
	_, _, _, err := s.b.slack.UpdateMessageContext(ctx, channel, ts,
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(cardMetadata(v.Request, v.Round)))
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && se.Err == "message_not_found" {
		return errors.Join(surface.ErrCardGone, err)
	}
	return err
}

func (s slackSurface) Remove(ctx context.Context, ref string) error {
	channel, ts := splitRef(ref)
	_, _, err := s.b.slack.DeleteMessageContext(ctx, channel, ts)
	return err
}

// Reply posts in the card's thread with the outbox row's id as metadata,
// by which FindReply finds it again.
func (s slackSurface) Reply(ctx context.Context, ref string, r surface.Reply) error {
	channel, ts := splitRef(ref)
	var text string
	if _, nudge := r.Nudge(); nudge {
		text = nudgeText(r.View, r.Row)
	} else {
		reason, _ := r.Row.Data["reason"].(string)
		text = threadText(r.View, reason)
	}
	_, _, err := s.b.slack.PostMessageContext(ctx, channel, slack.MsgOptionTS(ts), slack.MsgOptionText(text, false),
		slack.MsgOptionMetadata(replyMetadata(r.View.Request, r.Row)))
	return err
}

// Classify: a 429 pauses the channel for its Retry-After (at least 1 s);
// Slack's error codes outside transientErrors are permanent; the rest
// (5xx, timeouts, lost connections) are transient.
func (s slackSurface) Classify(err error) *delivery.Failure {
	// The Slack API URL is configurable; its words stay out of the row
	// and the log like every outbound call's.
	why := outbound.Describe(err)
	var rl *slack.RateLimitedError
	var se slack.SlackErrorResponse
	switch {
	case errors.As(err, &rl):
		return &delivery.Failure{Class: delivery.RateLimited, Delay: max(rl.RetryAfter, time.Second), Reason: delivery.ReasonRateLimited, Err: err}
	case errors.As(err, &se) && !slices.Contains(transientErrors, se.Err):
		return &delivery.Failure{Class: delivery.Permanent, Reason: why, Err: err}
	}
	return &delivery.Failure{Class: delivery.Transient, Reason: why, Err: err}
}
