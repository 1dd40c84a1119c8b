package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/slack-go/slack"

	"github.com/countersign/countersign/delivery"
	"github.com/countersign/countersign/internal/mutant"
	"github.com/countersign/countersign/store"
)

const (
	postponeNoCard   = 2 * time.Second
	historyPageLimit = 200
	historyPages     = 3
)

// DeliverOnce claims due outbox rows and delivers them: one goroutine per
// channel, rows of a channel in order and spaced by the post interval. It
// returns how many rows it claimed. Errors of single rows are recorded on the
// rows; the returned error is only for the claim itself.
func (b *Bot) DeliverOnce(ctx context.Context) (int, error) { return b.worker.RunOnce(ctx) }

// targetChannel groups a row by the channel it will write to: the card's for
// updates and replies, the tool's for posts.
func (b *Bot) targetChannel(ctx context.Context, row store.OutboxRow) string {
	if row.Kind != store.OutboxPostCard {
		if c, err := b.db.CardFor(ctx, row.RequestID, row.Round); err == nil {
			return c.Channel
		}
	}
	req, err := b.db.RequestByID(ctx, row.RequestID)
	if err != nil {
		return ""
	}
	return b.toolChannel(req.Tool)
}

// deliverRow makes one delivery of row; the worker classifies its error
// and records the outcome.
func (b *Bot) deliverRow(ctx context.Context, row store.OutboxRow) (delivery.Done, error) {
	channel := b.targetChannel(ctx, row)
	var note string
	var err error
	switch row.Kind {
	case store.OutboxPostCard:
		note, err = b.post(ctx, channel, row)
	case store.OutboxUpdateCard:
		note, err = b.update(ctx, row)
	case store.OutboxThreadReply:
		note, err = b.reply(ctx, channel, row)
	default:
		err = fmt.Errorf("unknown outbox kind %q", row.Kind)
	}
	return delivery.Done{Note: note}, err
}

// post posts a round's card, unless it is already there: recorded in cards,
// or (when an earlier attempt's outcome is unknown) found by its metadata in
// the channel's recent history.
func (b *Bot) post(ctx context.Context, channel string, row store.OutboxRow) (string, error) {
	if channel == "" {
		return "", fmt.Errorf("%w: no channel configured for the tool", errPermanent)
	}
	if _, err := b.db.CardFor(ctx, row.RequestID, row.Round); err == nil {
		return "card already posted", nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	v, err := b.loadCard(ctx, row.RequestID, row.Round)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("%w: request not found", errPermanent)
	} else if err != nil {
		return "", err
	}
	if row.Round != v.Request.Round {
		// A post for an old round: that round's card would be born superseded.
		return "round superseded before its card was posted", nil
	}
	text, blocks := renderCard(v)
	meta := cardMetadata(v.Request, row.Round)

	unsure, err := b.postMayHaveLanded(ctx, row)
	if err != nil {
		return "", err
	}
	if unsure {
		ts, err := b.findCard(ctx, channel, v, row)
		if err != nil {
			return "", err
		}
		if ts != "" {
			b.logger.Info("found a card posted by an earlier attempt", slog.String("key", v.Request.Key), slog.String("ts", ts))
			if _, _, _, err := b.slack.UpdateMessageContext(ctx, channel, ts,
				slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(meta)); err != nil {
				return "", err
			}
			_, err := b.db.RecordCard(ctx, store.Card{RequestID: v.Request.ID, Round: row.Round, Channel: channel, TS: ts,
				RenderedState: v.State, Settled: v.settled()})
			return "card found in channel history", err
		}
	}
	if !v.open(time.Now()) {
		// Nothing is left for a reviewer to do: the request settled or ran
		// out before its card could be posted, as every request does that
		// settled while Slack was off. A card now would be noise, at one
		// post a second per channel, so none is posted and the row is done
		// (the sweep queues posts only for pending rounds).
		b.logger.Info("no card for a request that settled before it was posted", slog.String("key", v.Request.Key),
			slog.Int("round", row.Round), slog.String("state", v.State))
		return "settled before its card was posted", nil
	}

	if err := b.wait(ctx, channel); err != nil {
		return "", err
	}
	postedChannel, ts, err := b.slack.PostMessageContext(ctx, channel,
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(meta))
	if err != nil {
		return "", err
	}
	if mutant.Every("card-twice", 4) { // planted bug: the card posted twice
		_, _, _ = b.slack.PostMessageContext(ctx, channel, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(meta))
	}
	if postedChannel == "" {
		postedChannel = channel
	}
	stood, err := b.db.RecordCard(ctx, store.Card{RequestID: v.Request.ID, Round: row.Round, Channel: postedChannel, TS: ts,
		RenderedState: v.State, Settled: v.settled()})
	if err != nil {
		return "", err
	}
	if stood.TS != ts {
		// Another worker's card for this round was recorded first: take ours back.
		b.logger.Warn("removing a duplicate card", slog.String("key", v.Request.Key), slog.String("ts", ts))
		if _, _, err := b.slack.DeleteMessageContext(ctx, postedChannel, ts); err != nil {
			b.logger.Error("removing a duplicate card", slog.String("key", v.Request.Key), slog.String("error", err.Error()))
		}
	}
	b.logger.Info("card posted", slog.String("key", v.Request.Key), slog.String("channel", postedChannel), slog.String("ts", ts))
	return "", nil
}

// postMayHaveLanded reports whether an earlier attempt at this round's card
// may have been posted without its ts being recorded: this row was claimed
// before (unless Slack said no for sure: rate limited), or another post row
// for the round exists.
func (b *Bot) postMayHaveLanded(ctx context.Context, row store.OutboxRow) (bool, error) {
	if row.Attempts > 1 && row.LastError != reasonRateLimited {
		return true, nil
	}
	return b.db.OtherPostRows(ctx, row)
}

// findCard looks for this round's card in the channel's recent history by its
// metadata and returns its ts, or "".
func (b *Bot) findCard(ctx context.Context, channel string, v cardView, row store.OutboxRow) (string, error) {
	params := &slack.GetConversationHistoryParameters{
		ChannelID: channel, Limit: historyPageLimit, IncludeAllMetadata: true,
		// Nothing older than the request round can be its card.
		Oldest: strconv.FormatInt(earliest(row.CreatedAt, v.Request.UpdatedAt, v.Request.CreatedAt).Add(-time.Minute).Unix(), 10),
	}
	for range historyPages {
		hist, err := b.slack.GetConversationHistoryContext(ctx, params)
		if err != nil {
			return "", err
		}
		for _, m := range hist.Messages {
			if isCard(m.Metadata, v.Request.Key, row.Round) {
				return m.Timestamp, nil
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

// update re-renders a round's card from the database.
func (b *Bot) update(ctx context.Context, row store.OutboxRow) (string, error) {
	card, v, note, err := b.postedCard(ctx, row)
	if note != "" || err != nil {
		return note, err
	}
	if reason := row.Data["reason"]; card.RenderedState == v.State && reason != "converge" && reason != store.OutboxReasonVote {
		return "the card already shows this state", nil
	}
	text, blocks := renderCard(v)
	if _, _, _, err := b.slack.UpdateMessageContext(ctx, card.Channel, card.TS,
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(cardMetadata(v.Request, row.Round))); err != nil {
		return "", err
	}
	return "", b.db.MarkCardRendered(ctx, store.MarkCardRenderedParams{RequestID: row.RequestID, Round: row.Round, State: v.State, Settled: v.settled()})
}

// reply answers in a card's thread: when its write failed or needs review,
// or to remind or escalate (nudgeText). Each reply carries its outbox row's
// id as metadata, so a row claimed again after an attempt whose outcome is
// unknown finds its reply in the thread instead of posting it twice.
func (b *Bot) reply(ctx context.Context, channel string, row store.OutboxRow) (string, error) {
	card, v, note, err := b.postedCard(ctx, row)
	if note != "" || err != nil {
		return note, err
	}
	// An earlier attempt may have posted it: look in the thread before
	// anything else, so a reply that landed is recorded as sent even when
	// the request was decided since.
	if row.Attempts > 1 && row.LastError != reasonRateLimited {
		found, err := b.findReply(ctx, card, row)
		if err != nil {
			return "", err
		}
		if found {
			return "reply found in the thread", nil
		}
	}
	kind, nudge := nudgeOf(row)
	text := ""
	if nudge {
		if v.Request.Status != store.RequestPending || v.Request.Round != row.Round {
			return "no longer pending: nothing to " + string(kind), nil
		}
		text = nudgeText(v, row)
	} else {
		reason, _ := row.Data["reason"].(string)
		text = threadText(v, reason)
	}
	if err := b.wait(ctx, card.Channel); err != nil {
		return "", err
	}
	_, _, err = b.slack.PostMessageContext(ctx, card.Channel, slack.MsgOptionTS(card.TS), slack.MsgOptionText(text, false),
		slack.MsgOptionMetadata(replyMetadata(v.Request, row)))
	if err == nil && nudge {
		b.metrics.Nudges.WithLabelValues(string(kind)).Inc()
	}
	return "", err
}

// postedCard loads a round's posted card and what it must show. Without a
// card yet, note and err are noCardYet's answer.
func (b *Bot) postedCard(ctx context.Context, row store.OutboxRow) (card store.Card, v cardView, note string, err error) {
	card, err = b.db.CardFor(ctx, row.RequestID, row.Round)
	if errors.Is(err, store.ErrNotFound) {
		note, err = b.noCardYet(ctx, row)
		return store.Card{}, cardView{}, note, err
	} else if err != nil {
		return store.Card{}, cardView{}, "", err
	}
	v, err = b.loadCard(ctx, row.RequestID, row.Round)
	if errors.Is(err, store.ErrNotFound) {
		return store.Card{}, cardView{}, "", fmt.Errorf("%w: request not found", errPermanent)
	}
	return card, v, "", err
}

// noCardYet handles an update or reply for a round whose card is not
// recorded: wait for a queued post, or drop it when no card will come. It
// always answers with a note or an error.
func (b *Bot) noCardYet(ctx context.Context, row store.OutboxRow) (string, error) {
	pending, err := b.db.PostPending(ctx, row.RequestID, row.Round)
	if err != nil {
		return "", err
	}
	if pending {
		return "", delivery.Postpone(postponeNoCard, "waiting for the card to be posted")
	}
	return "no card to update", nil
}

// wait spaces posts to a channel by the post interval, across the fleet:
// the slot comes from the shared budget in the ledger (slack_pacing), so
// replicas together keep Slack's pace.
func (b *Bot) wait(ctx context.Context, channel string) error { return b.pacer.Wait(ctx, channel) }

func earliest(ts ...time.Time) time.Time { return slices.MinFunc(ts, time.Time.Compare) }
