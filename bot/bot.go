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
)

// Defaults for Config fields left zero.
const (
	DefaultPostInterval = time.Second // Slack allows about one post per second per channel
	DefaultBatch        = 50
	DefaultLease        = 8 * time.Second // renewed while a delivery is worked (claims.go); with the poll, a dead replica's rows go out within 10s
	maxBodyBytes        = 256 << 10       // interaction payloads carry the whole card
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

	// LookupAllowed lists the users (U…, W…), user groups (S…) and channels
	// (C…, G…) whose slash commands may look requests up; empty: everyone.
	LookupAllowed []string
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
}

// Cards is the ledger's delivery side the bot works (a store.Store): the
// outbox rows it delivers, the cards it records, and what a card shows. It
// is all the bot may read or write in the ledger besides the Reviewer's
// decisions.
type Cards interface {
	ClaimOutbox(ctx context.Context, limit int, lease time.Duration) ([]store.OutboxRow, error)
	MarkOutboxDelivered(ctx context.Context, id int64, note string) error
	MarkOutboxFailed(ctx context.Context, id int64, reason string) error
	RetryOutbox(ctx context.Context, p store.RetryOutboxParams) error
	RenewOutbox(ctx context.Context, ids []int64, lease time.Duration) error
	TakePostSlot(ctx context.Context, channel string, interval time.Duration) (time.Duration, error)
	PauseChannel(ctx context.Context, channel string, d time.Duration) error
	ChannelPause(ctx context.Context, channel string) (time.Duration, error)
	PostPending(ctx context.Context, requestID string, round int) (bool, error)
	OtherPostRows(ctx context.Context, row store.OutboxRow) (bool, error)
	EnqueueStaleCards(ctx context.Context, limit int) (int, error)
	CardFor(ctx context.Context, requestID string, round int) (store.Card, error)
	RecordCard(ctx context.Context, c store.Card) (store.Card, error)
	MarkCardRendered(ctx context.Context, p store.MarkCardRenderedParams) error
	CardState(ctx context.Context, requestID string, round int) (string, error)
	RequestByID(ctx context.Context, id string) (store.Request, error)
	DecisionFor(ctx context.Context, requestID string, round int) (store.Decision, error)
	ExecutionForDecision(ctx context.Context, decisionID int64) (store.Execution, error)
	VotesFor(ctx context.Context, requestID string, round int) ([]store.Vote, error)
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
	interval time.Duration
	batch    int
	lease    time.Duration

	mu     sync.Mutex
	next   map[string]time.Time // channel → earliest next post
	paused map[string]time.Time // channel → end of a 429 pause

	clicks    singleflight.Group // identical clicks in flight
	answers   sync.WaitGroup
	answerSem chan struct{}

	lookupAllowed []string // who may look requests up; empty: everyone

	deliverEvery   time.Duration
	socket         *socketmode.Client
	startstop.Base // the outbox loop and Socket Mode (run.go)
}

// New returns a Bot.
func New(cfg Config) *Bot {
	b := &Bot{
		slack: cfg.Slack, db: cfg.Cards, review: cfg.Review, lookup: cfg.Lookup, groups: cfg.Groups, secrets: cfg.SigningSecrets,
		channel: cfg.DefaultChannel, resolver: cfg.Resolver, logger: cfg.Logger, metrics: cfg.Metrics,
		interval: cfg.PostInterval, batch: cfg.Batch, lease: cfg.Lease, lookupAllowed: cfg.LookupAllowed,
		next: make(map[string]time.Time), paused: make(map[string]time.Time),
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
	if b.interval == 0 {
		b.interval = DefaultPostInterval
	}
	if b.batch <= 0 {
		b.batch = DefaultBatch
	}
	if b.lease <= 0 {
		b.lease = DefaultLease
	}
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
