package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/countersign/countersign/internal/mutant"
	"github.com/countersign/countersign/internal/outbound"
	"github.com/countersign/countersign/store"
)

// Retry policy for transient delivery errors (5xx, timeouts, lost connections).
const (
	backoffBase      = 2 * time.Second
	backoffMax       = 5 * time.Minute
	maxTransientTry  = 40 // a few hours, mostly at the cap; then failed, and the sweep takes over
	postponeNoCard   = 2 * time.Second
	historyPageLimit = 200
	historyPages     = 3
)

// transientErrors are Slack error codes worth retrying; every other ok:false
// answer (channel_not_found, not_in_channel, invalid_auth, …) will not change
// with a retry, so the row is failed with the code and the error is logged.
var transientErrors = []string{"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}

// reasonRateLimited is recorded on a row Slack refused with 429: its post
// certainly did not land.
const reasonRateLimited = "rate limited"

// postponed is a delivery that cannot be made yet; it is not an attempt.
type postponed struct {
	delay  time.Duration
	reason string
}

func (p *postponed) Error() string { return p.reason }

// DeliverOnce claims due outbox rows and delivers them: one goroutine per
// channel, rows of a channel in order and spaced by the post interval. It
// returns how many rows it claimed. Errors of single rows are recorded on the
// rows; the returned error is only for the claim itself.
func (b *Bot) DeliverOnce(ctx context.Context) (int, error) {
	rows, err := b.db.ClaimOutbox(ctx, b.batch, b.lease)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	held := b.holdClaims(ctx, rows)
	defer held.release()
	byChannel := make(map[string][]store.OutboxRow)
	var order []string
	for _, row := range rows {
		ch := b.targetChannel(ctx, row)
		if _, seen := byChannel[ch]; !seen {
			order = append(order, ch)
		}
		byChannel[ch] = append(byChannel[ch], row)
	}
	var wg sync.WaitGroup
	for _, ch := range order {
		wg.Add(1)
		go func(ch string, rows []store.OutboxRow) {
			defer wg.Done()
			for _, row := range rows {
				if ctx.Err() != nil {
					return // the lease brings the rest back
				}
				b.deliverRow(ctx, ch, row)
				held.finished(row.ID)
			}
		}(ch, byChannel[ch])
	}
	wg.Wait()
	return len(rows), nil
}

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

// deliverRow makes one delivery and records its outcome on the row.
func (b *Bot) deliverRow(ctx context.Context, channel string, row store.OutboxRow) {
	kind := string(row.Kind)
	log := b.logger.With(slog.Int64("outbox_id", row.ID), slog.String("kind", kind), slog.String("request_id", row.RequestID))
	if until := b.pausedUntil(ctx, channel); !until.IsZero() {
		b.metrics.Deliveries.WithLabelValues(kind, "postponed").Inc()
		b.record(ctx, log, func(ctx context.Context) error {
			return b.db.RetryOutbox(ctx, store.RetryOutboxParams{ID: row.ID, Delay: time.Until(until), Reason: "channel paused by a rate limit"})
		})
		return
	}

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
	if err != nil && ctx.Err() != nil {
		return // shutting down; the outcome is unknown and the lease brings the row back
	}

	// The Slack API URL is configurable; its words stay out of the row
	// and the log like every outbound call's.
	why := outbound.Describe(err)
	var p *postponed
	var rl *slack.RateLimitedError
	var se slack.SlackErrorResponse
	switch {
	case err == nil:
		b.metrics.Deliveries.WithLabelValues(kind, "delivered").Inc()
		b.record(ctx, log, func(ctx context.Context) error { return b.db.MarkOutboxDelivered(ctx, row.ID, note) })
	case errors.As(err, &p):
		b.metrics.Deliveries.WithLabelValues(kind, "postponed").Inc()
		b.record(ctx, log, func(ctx context.Context) error {
			return b.db.RetryOutbox(ctx, store.RetryOutboxParams{ID: row.ID, Delay: p.delay, Reason: p.reason})
		})
	case errors.As(err, &rl):
		wait := max(rl.RetryAfter, time.Second)
		b.pause(ctx, channel, wait)
		b.metrics.Deliveries.WithLabelValues(kind, "rate_limited").Inc()
		log.Warn("slack rate limit", slog.String("channel", channel), slog.Duration("retry_after", wait))
		b.record(ctx, log, func(ctx context.Context) error {
			return b.db.RetryOutbox(ctx, store.RetryOutboxParams{ID: row.ID, Delay: wait, Reason: reasonRateLimited, Attempted: true})
		})
	case errors.As(err, &se) && !slices.Contains(transientErrors, se.Err), errors.Is(err, errPermanent):
		b.metrics.Deliveries.WithLabelValues(kind, "failed").Inc()
		log.Error("slack delivery failed for good", slog.String("channel", channel), slog.String("error", why))
		b.record(ctx, log, func(ctx context.Context) error { return b.db.MarkOutboxFailed(ctx, row.ID, why) })
		if row.Kind == store.OutboxUpdateCard && se.Err == "message_not_found" {
			// Someone deleted the card: stop the sweep from updating it for ever.
			b.record(ctx, log, func(ctx context.Context) error {
				return b.db.MarkCardRendered(ctx, store.MarkCardRenderedParams{RequestID: row.RequestID, Round: row.Round, State: "message_not_found", Settled: true})
			})
		}
	default:
		if row.Attempts >= maxTransientTry {
			b.metrics.Deliveries.WithLabelValues(kind, "failed").Inc()
			log.Error("slack delivery gave up", slog.Int("attempts", row.Attempts), slog.String("error", why))
			b.record(ctx, log, func(ctx context.Context) error { return b.db.MarkOutboxFailed(ctx, row.ID, why) })
			return
		}
		b.metrics.Deliveries.WithLabelValues(kind, "retry").Inc()
		log.Warn("slack delivery will be retried", slog.Int("attempts", row.Attempts), slog.String("error", why))
		b.record(ctx, log, func(ctx context.Context) error {
			return b.db.RetryOutbox(ctx, store.RetryOutboxParams{ID: row.ID, Delay: backoff(row.Attempts), Reason: why, Attempted: true})
		})
	}
}

// errPermanent marks a delivery that can never be made (its request is gone).
var errPermanent = errors.New("permanent")

// record writes a row's outcome; a failure only delays the row (its lease
// runs out and it is delivered again), so it is logged.
func (b *Bot) record(ctx context.Context, log *slog.Logger, fn func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := fn(ctx); err != nil {
		log.Error("recording delivery outcome", slog.String("error", err.Error()))
	}
}

// backoff is exponential with full jitter over the upper half, capped.
func backoff(attempts int) time.Duration {
	d := backoffMax
	if attempts < 20 {
		d = min(backoffBase<<max(attempts-1, 0), backoffMax)
	}
	return d/2 + rand.N(d/2+1)
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
		return "", &postponed{delay: postponeNoCard, reason: "waiting for the card to be posted"}
	}
	return "no card to update", nil
}

// wait spaces posts to a channel by the post interval, across the fleet:
// the slot comes from the shared budget in the ledger (slack_pacing), so
// replicas together keep Slack's pace. When the ledger cannot answer, this
// process's own spacing stands in.
func (b *Bot) wait(ctx context.Context, channel string) error {
	if b.interval < 0 {
		return nil
	}
	d, err := b.db.TakePostSlot(ctx, channel, b.interval)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b.logger.Warn("taking a post slot from the shared budget failed; pacing this process alone",
			slog.String("channel", channel), slog.String("error", err.Error()))
		d = b.localSlot(channel)
	}
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		// A 429 another replica met while this one waited pauses it too.
		if p, err := b.db.ChannelPause(ctx, channel); err == nil && p > 0 {
			return &postponed{delay: p, reason: "channel paused by a rate limit"}
		}
	}
	return nil
}

// localSlot is this process's own next slot for channel, from now.
func (b *Bot) localSlot(channel string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	at := latest(b.next[channel], now)
	b.next[channel] = at.Add(b.interval)
	return at.Sub(now)
}

// pause holds posts to channel back for d, on every replica: the pause is
// kept in the ledger, and in this process too for when the ledger cannot
// be reached.
func (b *Bot) pause(ctx context.Context, channel string, d time.Duration) {
	b.mu.Lock()
	b.paused[channel] = latest(b.paused[channel], time.Now().Add(d))
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := b.db.PauseChannel(ctx, channel, d); err != nil {
		b.logger.Warn("sharing a rate limit's pause failed; this process alone waits it out",
			slog.String("channel", channel), slog.String("error", err.Error()))
	}
}

// pausedUntil is when channel's pause ends, this process's or another
// replica's; zero when it is not paused.
func (b *Bot) pausedUntil(ctx context.Context, channel string) time.Time {
	b.mu.Lock()
	until, ok := b.paused[channel]
	if ok && time.Now().After(until) {
		delete(b.paused, channel)
		until = time.Time{}
	}
	b.mu.Unlock()
	if !until.IsZero() {
		return until
	}
	d, err := b.db.ChannelPause(ctx, channel)
	if err != nil || d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

func earliest(ts ...time.Time) time.Time { return slices.MinFunc(ts, time.Time.Compare) }

func latest(ts ...time.Time) time.Time { return slices.MaxFunc(ts, time.Time.Compare) }
