package bot

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
	"golang.org/x/sync/singleflight"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/startstop"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// Defaults for Config fields left zero.
const (
	DefaultPostInterval = surface.DefaultPostInterval // Slack allows about one post per second per channel
	DefaultBatch        = surface.DefaultBatch
	DefaultLease        = surface.DefaultLease // renewed while a delivery is worked; with the poll, a dead replica's rows go out within 10s
	maxBodyBytes        = 256 << 10            // interaction payloads carry the whole card
)

// Config is what a Bot needs.
type Config struct {
	Slack          *slack.Client
	Review         Reviewer
	Cards          Cards
	Lookup         Lookup
	Groups         approvals.GroupResolver // nil: lookup_allowed may only list users and channels
	SigningSecrets []string                // a request verifies when it matches any (two while one is rotated); never logged
	DefaultChannel string                  // for tools without a channel
	Resolver       Resolver                // nil: needs-review buttons answer that resolution is not available
	Logger         *slog.Logger
	Metrics        *Metrics // nil: not exported
	// PostInterval spaces posts to one channel; zero means DefaultPostInterval,
	// negative means no spacing (tests).
	PostInterval time.Duration
	Batch        int           // outbox rows per DeliverOnce; zero means DefaultBatch
	Lease        time.Duration // how long a claimed row is left alone; zero means DefaultLease
	// DeliverInterval is how often Start's outbox loop looks for due
	// deliveries; zero means DefaultDeliverInterval.
	DeliverInterval time.Duration
	// Socket, when set, is the Socket Mode connection Start runs.
	Socket *socketmode.Client
	// Surfaces are review surfaces besides Slack that every tool's cards
	// go to, delivered by the same outbox loop.
	Surfaces []surface.Adapter
	// Previews asks the tools' preview endpoints before their cards are
	// posted (surface.Config.Previews); nil asks none.
	Previews surface.PreviewFetcher

	// LookupAllowed lists the users (U…, W…), user groups (S…) and channels
	// (C…, G…) whose slash commands may look requests up; empty: everyone.
	LookupAllowed []string
	// Admins lists the users (U…, W…) and user groups (S…) who may list
	// and revoke everyone's standing grants.
	Admins []string
}

// Reviewer is what the bot asks of review (approvals.Service): the tools'
// settings, decisions, and who may resolve an execution.
type Reviewer interface {
	Tool(name string) (approvals.Tool, bool)
	Decide(ctx context.Context, d approvals.Decision) (approvals.Outcome, error)
	AuthorizeResolution(ctx context.Context, r approvals.Resolution) (store.Request, error)
	// Approvers returns who may vote on a request (its frozen policy's).
	Approvers(req store.Request) []string
	// MayVote is nil when user may cast verdict on req.
	MayVote(ctx context.Context, req store.Request, user string, verdict store.Verdict) error
	// Grants lists the live standing grants of viewer, or everyone's for
	// an admin; RevokeGrant ends one (approvals.Service).
	Grants(ctx context.Context, viewer string, admin bool) ([]approvals.Grant, error)
	RevokeGrant(ctx context.Context, id, by string, admin bool) (approvals.Grant, bool, error)
}

// Cards is the ledger's delivery side the bot works (a store.Store): the
// outbox rows it delivers to its surfaces, the cards they record, what a
// card shows, and the convergence sweep. It is all the bot may read or
// write in the ledger besides the Reviewer's decisions.
type Cards interface {
	surface.Ledger
	EnqueueStaleCards(ctx context.Context, limit int) (int, error)
}

// Lookup answers the slash command's lookups (lookup.Service).
type Lookup interface {
	Run(ctx context.Context, q lookup.Query) (lookup.Answer, error)
}

// Bot is the Slack surface: outbox delivery, card rendering, interactions,
// slash commands.
type Bot struct {
	slack    *slack.Client
	review   Reviewer
	db       Cards
	lookup   Lookup
	groups   approvals.GroupResolver
	secrets  []string
	channel  string
	resolver Resolver
	logger   *slog.Logger
	metrics  *Metrics
	delivery *surface.Deliverer // the outbox, to Slack and Config.Surfaces

	clicks    singleflight.Group // identical clicks in flight
	answers   sync.WaitGroup
	answerSem chan struct{}

	lookupAllowed []string // who may look requests up; empty: everyone
	admins        []string // who may list and revoke everyone's grants

	deliverEvery   time.Duration
	socket         *socketmode.Client
	startstop.Base // the outbox loop and Socket Mode (run.go)
}

// New returns a Bot.
func New(cfg Config) *Bot {
	b := &Bot{
		slack: cfg.Slack, db: cfg.Cards, review: cfg.Review, lookup: cfg.Lookup, groups: cfg.Groups, secrets: cfg.SigningSecrets,
		channel: cfg.DefaultChannel, resolver: cfg.Resolver, logger: cfg.Logger, metrics: cfg.Metrics,
		lookupAllowed: cfg.LookupAllowed, admins: cfg.Admins,
		answerSem:    make(chan struct{}, 32),
		deliverEvery: cfg.DeliverInterval, socket: cfg.Socket,
	}
	if b.deliverEvery <= 0 {
		b.deliverEvery = DefaultDeliverInterval
	}
	if b.logger == nil {
		b.logger = slog.New(slog.DiscardHandler)
	}
	if b.metrics == nil {
		b.metrics = newMetrics()
	}
	b.delivery = surface.New(surface.Config{
		Ledger: b.db, Tools: b.review, Adapters: append([]surface.Adapter{b.Surface()}, cfg.Surfaces...),
		PostInterval: cfg.PostInterval, Batch: cfg.Batch, Lease: cfg.Lease, Poll: b.deliverEvery,
		Logger: b.logger, Deliveries: b.metrics.Deliveries, Nudges: b.metrics.Nudges,
		Previews: cfg.Previews,
	})
	return b
}

// Wait blocks until every ephemeral answer in flight has been sent or has
// failed, without stopping the bot (Stop waits for them too); tests call it
// before counting calls.
func (b *Bot) Wait() { b.answers.Wait() }

// toolChannel is where a tool's cards go.
func (b *Bot) toolChannel(tool string) string {
	if t, ok := b.review.Tool(tool); ok && t.Channel != "" {
		return t.Channel
	}
	return b.channel
}
