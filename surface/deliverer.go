package surface

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/delivery"
	"github.com/countersign/countersign/store"
)

// Defaults and the retry policy of card deliveries.
const (
	DefaultPostInterval = time.Second // Slack allows about one post per second per channel
	DefaultBatch        = 50
	DefaultLease        = 8 * time.Second // renewed while a delivery is worked; with the poll, a dead replica's rows go out within 10s
	DefaultPoll         = time.Second

	backoffBase     = 2 * time.Second
	backoffMax      = 5 * time.Minute
	maxTransientTry = 40 // a few hours, mostly at the cap; then failed, and the sweep takes over
	postponeNoCard  = 2 * time.Second
	// maxRounds bounds the batches one poll delivers, so a backlog drains
	// without one poll running for ever.
	maxRounds = 20
)

// Config is what a Deliverer needs.
type Config struct {
	Ledger   Ledger
	Tools    Tools
	Adapters []Adapter // the surfaces every tool's cards go to
	// PostInterval spaces posts to one lane; zero means
	// DefaultPostInterval, negative means no spacing (tests).
	PostInterval time.Duration
	Batch        int           // rows per RunOnce; zero means DefaultBatch
	Lease        time.Duration // zero means DefaultLease
	Poll         time.Duration // how often Start's loop looks; zero means DefaultPoll
	Logger       *slog.Logger
	// Deliveries counts outcomes by outbox kind and outcome, Nudges the
	// reminders and escalations posted by kind; nil: not counted.
	Deliveries *prometheus.CounterVec
	Nudges     *prometheus.CounterVec
	// Previews asks the tools' preview endpoints before their cards are
	// posted (preview.go); nil asks none, and a tool's cards say its
	// preview is unavailable.
	Previews PreviewFetcher
}

// Deliverer delivers the outbox to the review surfaces, on the delivery
// worker (its Start, Stop and RunOnce).
type Deliverer struct {
	db       Ledger
	tools    Tools
	adapters []Adapter
	logger   *slog.Logger
	pacer    *delivery.Pacer
	metrics  Config
	previews *Previewer // nil without Config.Previews

	*delivery.Worker[store.OutboxRow]
}

// New returns a Deliverer.
func New(cfg Config) *Deliverer {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PostInterval == 0 {
		cfg.PostInterval = DefaultPostInterval
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	d := &Deliverer{db: cfg.Ledger, tools: cfg.Tools, adapters: cfg.Adapters, logger: cfg.Logger, metrics: cfg}
	d.pacer = delivery.NewPacer(budget{cfg.Ledger}, cfg.PostInterval, cfg.Logger)
	if cfg.Previews != nil {
		d.previews = NewPreviewer(cfg.Ledger, cfg.Tools, cfg.Previews, cfg.Logger)
	}
	d.Worker = delivery.New(delivery.Config[store.OutboxRow]{
		Name: "outbox", Queue: outbox{d}, Deliver: d.deliver, Lane: d.lane, Pacer: d.pacer,
		Backoff:     delivery.Backoff{Base: backoffBase, Max: backoffMax},
		MaxAttempts: maxTransientTry,
		Batch:       cfg.Batch, Lease: cfg.Lease, Poll: cfg.Poll, MaxRounds: maxRounds,
		Logger: cfg.Logger,
	})
	return d
}

// surfacesOf are the adapters a row goes to: its surface's, or, for a row
// that names none, every one its request's tool uses (Tool.Surfaces; all
// when it names none, or when the request cannot be read here: each
// surface's delivery reads it again). A surface no longer configured has
// none.
func (d *Deliverer) surfacesOf(ctx context.Context, row store.OutboxRow) []Adapter {
	if row.Surface == "" {
		if len(d.adapters) < 2 {
			return d.adapters
		}
		req, err := d.db.RequestByID(ctx, row.RequestID)
		if err != nil {
			return d.adapters
		}
		tool, ok := d.tools.Tool(req.Tool)
		if !ok || tool.Surfaces == nil {
			return d.adapters
		}
		var uses []Adapter
		for _, a := range d.adapters {
			if slices.Contains(tool.Surfaces, a.Name()) {
				uses = append(uses, a)
			}
		}
		return uses
	}
	for _, a := range d.adapters {
		if a.Name() == row.Surface {
			return []Adapter{a}
		}
	}
	return nil
}

// lane groups a row by where it will write: the card's destination for
// updates and replies, the tool's for posts. A row for several surfaces
// is only handed on, and shares one lane.
func (d *Deliverer) lane(ctx context.Context, row store.OutboxRow) string {
	as := d.surfacesOf(ctx, row)
	if len(as) != 1 {
		return ""
	}
	return laneName(d.destination(ctx, as[0], row))
}

// destination is where row writes on a's surface.
func (d *Deliverer) destination(ctx context.Context, a Adapter, row store.OutboxRow) store.Lane {
	lane := store.Lane{Surface: a.Name(), Destination: row.Destination}
	if lane.Destination != "" {
		return lane
	}
	if row.Kind != store.OutboxPostCard {
		if c, err := d.db.CardFor(ctx, row.RequestID, row.Round, a.Name()); err == nil {
			lane.Destination = a.DestinationOf(c.Ref)
			return lane
		}
	}
	if req, err := d.db.RequestByID(ctx, row.RequestID); err == nil {
		lane.Destination = a.Destination(req.Tool)
	}
	return lane
}

// errPermanent marks a delivery that can never be made (its request is gone).
var errPermanent = errors.New("permanent")

// deliver makes one delivery of row; the worker classifies its error and
// records the outcome.
func (d *Deliverer) deliver(ctx context.Context, row store.OutboxRow) (delivery.Done, error) {
	as := d.surfacesOf(ctx, row)
	switch len(as) {
	case 0:
		return delivery.Done{}, delivery.Permanently(fmt.Errorf("%w: surface %q is not configured", errPermanent, row.Surface))
	case 1:
	default:
		names := make([]string, len(as))
		for i, a := range as {
			names[i] = a.Name()
		}
		if err := d.db.FanOutOutbox(ctx, row, names); err != nil {
			return delivery.Done{}, err
		}
		return delivery.Done{Note: "handed to " + strings.Join(names, ", ")}, nil
	}
	a := as[0]
	var note string
	var err error
	switch row.Kind {
	case store.OutboxPostCard:
		note, err = d.post(ctx, a, row)
	case store.OutboxUpdateCard:
		note, err = d.update(ctx, a, row)
	case store.OutboxThreadReply:
		note, err = d.reply(ctx, a, row)
	default:
		err = fmt.Errorf("unknown outbox kind %q", row.Kind)
	}
	if errors.Is(err, errPermanent) {
		err = delivery.Permanently(err)
	}
	return delivery.Done{Note: note}, err
}

// called classifies an error of one of a's calls.
func called(a Adapter, err error) error {
	if err == nil {
		return nil
	}
	return a.Classify(err)
}

// post posts a round's card, unless it is already there: recorded in cards,
// or (when an earlier attempt's outcome is unknown) found by the surface
// (Adapter.Find).
func (d *Deliverer) post(ctx context.Context, a Adapter, row store.OutboxRow) (string, error) {
	if _, err := d.db.CardFor(ctx, row.RequestID, row.Round, a.Name()); err == nil {
		return "card already posted", nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	v, err := Load(ctx, d.db, d.tools, row.RequestID, row.Round)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("%w: request not found", errPermanent)
	} else if err != nil {
		return "", err
	}
	// The destination from the request just read: destination would read
	// it again, a round trip per card.
	lane := store.Lane{Surface: a.Name(), Destination: row.Destination}
	if lane.Destination == "" {
		lane.Destination = a.Destination(v.Request.Tool)
	}
	if lane.Destination == "" {
		return "", fmt.Errorf("%w: no %s destination configured for the tool", errPermanent, a.Name())
	}
	if row.Round != v.Request.Round {
		// A post for an old round: that round's card would be born superseded.
		return "round superseded before its card was posted", nil
	}
	unsure, err := d.postMayHaveLanded(ctx, a, row)
	if err != nil {
		return "", err
	}
	if unsure {
		since := earliest(row.CreatedAt, v.Request.UpdatedAt, v.Request.CreatedAt)
		ref, err := a.Find(ctx, lane.Destination, v, since)
		if err != nil {
			return "", called(a, err)
		}
		if ref != "" {
			d.logger.Info("found a card posted by an earlier attempt", slog.String("surface", a.Name()),
				slog.String("key", v.Request.Key), slog.String("ref", ref))
			if err := a.Update(ctx, ref, v); err != nil {
				return "", called(a, err)
			}
			_, err := d.db.RecordCard(ctx, store.Card{RequestID: v.Request.ID, Round: row.Round, Surface: a.Name(), Ref: ref,
				RenderedState: v.State, Settled: v.Settled()})
			return "card found in channel history", err
		}
	}
	if !v.Open(time.Now()) {
		// Nothing is left for a reviewer to do: the request settled or ran
		// out before its card could be posted, as every request does that
		// settled while the surface was off. A card now would be noise, at
		// one post a second per lane, so none is posted and the row is
		// done (the sweep queues posts only for pending rounds).
		d.logger.Info("no card for a request that settled before it was posted", slog.String("surface", a.Name()),
			slog.String("key", v.Request.Key), slog.Int("round", row.Round), slog.String("state", v.State))
		return "settled before its card was posted", nil
	}
	// The card waits for the write's preview, at most its tool's timeout.
	v.Preview = d.previews.Await(ctx, v)
	if err := d.pacer.Wait(ctx, laneName(lane)); err != nil {
		return "", err
	}
	ref, err := a.Post(ctx, lane.Destination, v)
	if err != nil {
		return "", called(a, err)
	}
	stood, err := d.db.RecordCard(ctx, store.Card{RequestID: v.Request.ID, Round: row.Round, Surface: a.Name(), Ref: ref,
		RenderedState: v.State, Settled: v.Settled()})
	if err != nil {
		return "", err
	}
	if stood.Ref != ref {
		// Another worker's card for this round was recorded first: take ours back.
		d.logger.Warn("removing a duplicate card", slog.String("surface", a.Name()), slog.String("key", v.Request.Key), slog.String("ref", ref))
		if err := a.Remove(ctx, ref); err != nil {
			d.logger.Error("removing a duplicate card", slog.String("key", v.Request.Key), slog.String("error", err.Error()))
		}
	}
	d.logger.Info("card posted", slog.String("surface", a.Name()), slog.String("key", v.Request.Key), slog.String("ref", ref))
	return "", nil
}

// postMayHaveLanded reports whether an earlier attempt at this round's card
// may have been posted without its ref being recorded: this row was claimed
// before (unless the surface said no for sure: rate limited), or another
// post row for the round and surface exists.
func (d *Deliverer) postMayHaveLanded(ctx context.Context, a Adapter, row store.OutboxRow) (bool, error) {
	if row.Attempts > 1 && row.LastError != delivery.ReasonRateLimited {
		return true, nil
	}
	row.Surface = a.Name()
	return d.db.OtherPostRows(ctx, row)
}

// update re-renders a round's card from the ledger.
func (d *Deliverer) update(ctx context.Context, a Adapter, row store.OutboxRow) (string, error) {
	card, v, note, err := d.postedCard(ctx, a, row)
	if note != "" || err != nil {
		return note, err
	}
	if reason := row.Data["reason"]; card.RenderedState == v.State && reason != store.OutboxReasonConverge && reason != store.OutboxReasonVote {
		return "the card already shows this state", nil
	}
	if err := a.Update(ctx, card.Ref, v); err != nil {
		return "", called(a, err)
	}
	return "", d.db.MarkCardRendered(ctx, store.MarkCardRenderedParams{RequestID: row.RequestID, Round: row.Round, Surface: a.Name(),
		State: v.State, Settled: v.Settled()})
}

// reply answers in a card's thread: when its write failed or needs review,
// or to remind or escalate. A row claimed again after an attempt whose
// outcome is unknown looks for its reply in the thread first
// (Adapter.FindReply) instead of posting it twice.
func (d *Deliverer) reply(ctx context.Context, a Adapter, row store.OutboxRow) (string, error) {
	card, v, note, err := d.postedCard(ctx, a, row)
	if note != "" || err != nil {
		return note, err
	}
	r := Reply{View: v, Row: row}
	// An earlier attempt may have posted it: look in the thread before
	// anything else, so a reply that landed is recorded as sent even when
	// the request was decided since.
	if row.Attempts > 1 && row.LastError != delivery.ReasonRateLimited {
		found, err := a.FindReply(ctx, card.Ref, r)
		if err != nil {
			return "", called(a, err)
		}
		if found {
			return "reply found in the thread", nil
		}
	}
	kind, nudge := r.Nudge()
	if nudge && (v.Request.Status != store.RequestPending || v.Request.Round != row.Round) {
		return "no longer pending: nothing to " + string(kind), nil
	}
	if err := d.pacer.Wait(ctx, laneName(store.Lane{Surface: a.Name(), Destination: a.DestinationOf(card.Ref)})); err != nil {
		return "", err
	}
	if err := a.Reply(ctx, card.Ref, r); err != nil {
		return "", called(a, err)
	}
	if nudge && d.metrics.Nudges != nil {
		d.metrics.Nudges.WithLabelValues(string(kind)).Inc()
	}
	return "", nil
}

// postedCard loads a round's posted card on a's surface and what it must
// show. Without a card yet, note and err are noCardYet's answer.
func (d *Deliverer) postedCard(ctx context.Context, a Adapter, row store.OutboxRow) (card store.Card, v View, note string, err error) {
	card, err = d.db.CardFor(ctx, row.RequestID, row.Round, a.Name())
	if errors.Is(err, store.ErrNotFound) {
		note, err = d.noCardYet(ctx, row)
		return store.Card{}, View{}, note, err
	} else if err != nil {
		return store.Card{}, View{}, "", err
	}
	v, err = Load(ctx, d.db, d.tools, row.RequestID, row.Round)
	if errors.Is(err, store.ErrNotFound) {
		return store.Card{}, View{}, "", fmt.Errorf("%w: request not found", errPermanent)
	}
	return card, v, "", err
}

// noCardYet handles an update or reply for a round whose card is not
// recorded: wait for a queued post, or drop it when no card will come. It
// always answers with a note or an error.
func (d *Deliverer) noCardYet(ctx context.Context, row store.OutboxRow) (string, error) {
	pending, err := d.db.PostPending(ctx, row.RequestID, row.Round)
	if err != nil {
		return "", err
	}
	if pending {
		return "", delivery.Postpone(postponeNoCard, "waiting for the card to be posted")
	}
	return "no card to update", nil
}

// Stop stops the deliveries, then waits for the previews being fetched.
func (d *Deliverer) Stop(ctx context.Context) error {
	err := d.Worker.Stop(ctx)
	d.previews.Wait()
	return err
}

func earliest(ts ...time.Time) time.Time {
	out := ts[0]
	for _, t := range ts[1:] {
		if t.Before(out) {
			out = t
		}
	}
	return out
}
