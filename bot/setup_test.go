package bot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
	"github.com/countersign/countersign/surface"
)

const (
	secret      = "test-signing-secret"
	billingChan = "C0BILLING"
	notesChan   = "C0NOTES"
)

// bundle is what a Slack surface test works with.
type bundle struct {
	t     testing.TB
	ctx   context.Context
	db    *postgres.Driver // nil on another driver
	store store.Store
	// rawCount and rawExec run SQL on the same database ($1… in order).
	rawCount func(query string, args ...any) (int, error)
	rawExec  func(query string, args ...any) error
	fake     *bottest.Slack
	review   *approvals.Service
	bot      *bot.Bot
	server   *httptest.Server
}

// options tweak setup; nil fields mean defaults.
type options struct {
	resolver bot.Resolver
	lease    time.Duration
	dbURL    string
	// lookupAllowed is slack.lookup_allowed; nil lets everyone look up.
	lookupAllowed []string
	logger        *slog.Logger
	// driver, when set, is the database instead of PostgreSQL.
	driver *drivertest.Driver
	// signingSecrets are Slack's signing secrets; nil is secret alone.
	signingSecrets []string
	// surfaces are review surfaces besides Slack.
	surfaces []surface.Adapter
	// tools are configured beside the default ones.
	tools map[string]approvals.Tool
	// admins are slack.admins.
	admins []string
}

func setup(t testing.TB, opts *options) *bundle {
	t.Helper()
	if opts == nil {
		opts = &options{}
	}
	var (
		db       *postgres.Driver
		ledger   store.Store
		rawCount func(query string, args ...any) (int, error)
		rawExec  func(query string, args ...any) error
	)
	switch {
	case opts.driver != nil:
		bk := opts.driver.Open(t.(*testing.T), true)
		ledger, rawCount, rawExec = bk.Store, bk.QueryInt, bk.Exec
	default:
		if opts.dbURL != "" {
			var err error
			if db, err = postgres.Open(context.Background(), opts.dbURL); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(db.Close)
		} else {
			db = storetest.NewDB(t)
		}
		ledger = store.NewLedger(db, store.Options{})
		rawCount = func(query string, args ...any) (n int, err error) {
			err = db.Pool.QueryRow(context.Background(), query, args...).Scan(&n)
			return n, err
		}
		rawExec = func(query string, args ...any) error {
			_, err := db.Pool.Exec(context.Background(), query, args...)
			return err
		}
	}
	fake := bottest.New(t)
	client := newClient(fake)
	logger := opts.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	groups := bot.NewGroups(client, time.Minute)
	signingSecrets := opts.signingSecrets
	if signingSecrets == nil {
		signingSecrets = []string{secret}
	}
	tools := map[string]approvals.Tool{
		"billing.credit": {Name: "billing.credit", Channel: billingChan, Approvers: []string{"UANA", "UBEN", "S0FINANCE"}, MaxAttempts: 5},
		"notes.add":      {Name: "notes.add", Channel: notesChan, Approvers: []string{"UANA"}, Reversible: true},
		"fast.expiring":  {Name: "fast.expiring", Channel: billingChan, Approvers: []string{"UANA"}, RequestTTL: time.Millisecond},
		// Two of its approvers, three above 1000.00, and a reject may say why.
		"billing.quorum": {Name: "billing.quorum", Channel: billingChan, Approvers: []string{"UANA", "UBEN", "UCAT", "UDAN", "UOWN"},
			Approvals: 2, RejectReason: approvals.ReasonOptional, MaxAttempts: 5, Tiers: []approvals.Tier{
				{When: approvals.Condition{Field: "amount_cents", Op: approvals.OpGT, Value: json.Number("100000")}, Approvals: 3},
			}},
		"billing.strict": {Name: "billing.strict", Channel: billingChan, Approvers: []string{"UANA", "UBEN"}, RejectReason: approvals.ReasonRequired},
	}
	maps.Copy(tools, opts.tools)
	review := approvalstest.New(t, approvals.Config{DB: ledger, Logger: logger, Groups: groups, Tools: tools,
		Owners: map[string][]string{"billing-agent": {"UOWN"}}})
	b := bot.New(bot.Config{
		Slack: client, Review: review, Cards: ledger, Lookup: lookup.Service{DB: ledger}, Groups: groups, SigningSecrets: signingSecrets, Resolver: opts.resolver,
		Logger: logger, PostInterval: -1, Lease: opts.lease, LookupAllowed: opts.lookupAllowed,
		Surfaces: opts.surfaces, Admins: opts.admins,
	})
	mux := http.NewServeMux()
	mux.Handle("POST /slack/interactions", b.Interactions())
	mux.Handle("POST /slack/commands", b.Commands())
	server := httptest.NewServer(mux)
	t.Cleanup(server.Close)
	t.Cleanup(b.Wait)
	return &bundle{t: t, ctx: context.Background(), db: db, store: ledger, rawCount: rawCount, rawExec: rawExec, fake: fake, review: review, bot: b, server: server}
}

// intent is a factory for requests; zero fields take defaults.
type intent struct {
	tool, invoice, requestedFor, key string
	effect                           string // JSON; default an invoice credit
	n                                int
}

func (b *bundle) submit(in intent) store.Request {
	b.t.Helper()
	if in.tool == "" {
		in.tool = "billing.credit"
	}
	if in.invoice == "" {
		in.invoice = fmt.Sprintf("inv_%d", 8841+in.n)
	}
	effect := fmt.Sprintf(`{"invoice":%q,"amount_cents":%d,"currency":"USD"}`, in.invoice, 4200+in.n)
	if in.effect != "" {
		effect = in.effect
	}
	intent := approvalstest.Intent(&approvalstest.IntentOpts{
		Step: new(fmt.Sprint(in.n + 1)), Tool: &in.tool, Effect: &effect,
		Summary: new("Credit " + in.invoice), Reason: new("customer reported a duplicate charge"), RequestedFor: &in.requestedFor,
		IdempotencyKey: &in.key,
	})
	if strings.HasPrefix(in.key, approvals.KeyPrefix) {
		return b.storeUnderKey(intent)
	}
	return approvalstest.Submit(b.t, b.review, "billing-agent", intent)
}

// storeUnderKey stores in under its idempotency key as the ledger stores
// any request, card post owed: lookups are tested with keys that share a
// prefix, which no intent derives and the hook refuses from a client.
func (b *bundle) storeUnderKey(in approvals.Intent) store.Request {
	b.t.Helper()
	snapshot, err := approvals.Canonicalize(in.Effect)
	if err != nil {
		b.t.Fatal(err)
	}
	_, basisHash, err := approvals.Derive(in.Basis())
	if err != nil {
		b.t.Fatal(err)
	}
	req, _, err := b.store.InsertRequest(b.ctx, store.NewRequest{Key: in.IdempotencyKey, BasisHash: basisHash, RunID: in.RunID,
		Step: in.Step, Tool: in.Tool, Snapshot: snapshot, PayloadHash: approvals.PayloadHash(snapshot), Summary: in.Summary,
		Reason: in.Reason, RequestedBy: "billing-agent", RequestedFor: in.RequestedFor, TTL: time.Hour,
		Policy: b.review.Tools[in.Tool].PolicyFor(snapshot)})
	if err != nil {
		b.t.Fatalf("storing under %s: %v", in.IdempotencyKey, err)
	}
	return req
}

// submitAgo submits in as if it had arrived ago earlier by the review
// clock, so a short TTL has run out before the next call, whatever the time
// between the two.
func (b *bundle) submitAgo(ago time.Duration, in intent) store.Request {
	b.t.Helper()
	b.review.Now = func() time.Time { return time.Now().Add(-ago) }
	defer func() { b.review.Now = nil }()
	return b.submit(in)
}

// cancel withdraws a pending request as the agent that submitted it.
func (b *bundle) cancel(req store.Request) {
	b.t.Helper()
	if _, err := b.review.Cancel(b.ctx, approvals.Agent{Name: "billing-agent"}, req.ID); err != nil {
		b.t.Fatalf("cancelling: %v", err)
	}
}

// deliver runs the outbox worker until nothing is pending, polling with a
// deadline for rows that wait on a retry or a rate limit.
func (b *bundle) deliver() {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := b.bot.DeliverOnce(b.ctx); err != nil {
			b.t.Fatalf("delivering: %v", err)
		}
		if b.pendingOutbox() == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("outbox still has %d pending rows", b.pendingOutbox())
		}
		<-tick.C
	}
}

func (b *bundle) pendingOutbox() int {
	return b.count(`SELECT count(*) FROM outbox WHERE state = 'pending'`)
}

func (b *bundle) count(sql string, args ...any) int {
	b.t.Helper()
	n, err := b.rawCount(sql, args...)
	if err != nil {
		b.t.Fatalf("counting: %v", err)
	}
	return n
}

func (b *bundle) exec(sql string, args ...any) {
	b.t.Helper()
	if err := b.rawExec(sql, args...); err != nil {
		b.t.Fatalf("exec: %v", err)
	}
}

func (b *bundle) request(id string) store.Request {
	b.t.Helper()
	req, err := b.store.RequestByID(b.ctx, id)
	if err != nil {
		b.t.Fatal(err)
	}
	return req
}

// card returns the fake's copy of a request round's card.
func (b *bundle) card(id string, round int) bottest.Message {
	b.t.Helper()
	c, err := b.store.CardFor(b.ctx, id, round, onSlack)
	if err != nil {
		b.t.Fatalf("card of %s round %d: %v", id, round, err)
	}
	m, ok := b.fake.Message(channelOf(c.Ref), tsOf(c.Ref))
	if !ok {
		b.t.Fatalf("card %s/%s is not in the fake", channelOf(c.Ref), tsOf(c.Ref))
	}
	return m
}

// post sends a signed request to path.
func (b *bundle) post(path string, body []byte, header http.Header) (int, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.server.URL+path, bytes.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatalf("posting %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// click presses a button on a card as user, signed.
func (b *bundle) click(user, channel, actionID, value string) int {
	b.t.Helper()
	body := bottest.ClickForm(bottest.ClickPayload(user, channel, actionID, value))
	status, _ := b.post("/slack/interactions", body, bottest.Sign(secret, time.Now(), body))
	return status
}

// command runs /countersign text as user in the billing channel and returns
// the ephemeral text.
func (b *bundle) command(user, text string) string {
	b.t.Helper()
	return b.commandIn(user, billingChan, text)
}

// commandIn runs /countersign text as user in channel and returns the
// ephemeral text.
func (b *bundle) commandIn(user, channel, text string) string {
	b.t.Helper()
	body := bottest.CommandForm(user, channel, text)
	status, out := b.post("/slack/commands", body, bottest.Sign(secret, time.Now(), body))
	if status != http.StatusOK {
		b.t.Fatalf("/countersign %s: status %d: %s", text, status, out)
	}
	var answer struct {
		ResponseType string `json:"response_type"`
		Text         string `json:"text"`
	}
	if err := json.Unmarshal([]byte(out), &answer); err != nil {
		b.t.Fatalf("decoding answer: %v", err)
	}
	if answer.ResponseType != "ephemeral" {
		b.t.Fatalf("answer is %q, not ephemeral", answer.ResponseType)
	}
	return answer.Text
}

// ephemerals returns the texts of the ephemeral answers sent to user.
func (b *bundle) ephemerals(user string) []string {
	b.bot.Wait()
	var out []string
	for _, c := range b.fake.Calls("chat.postEphemeral") {
		if c.Form.Get("user") == user {
			out = append(out, c.Form.Get("text"))
		}
	}
	return out
}

func hasAny(texts []string, sub string) bool {
	for _, t := range texts {
		if strings.Contains(t, sub) {
			return true
		}
	}
	return false
}

var timeZero time.Time

func bottestLanded() bottest.Failure { return bottest.Failure{Status: 502, Land: true} }

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

func newClient(fake *bottest.Slack) *slack.Client {
	return slack.New("xoxb-test", slack.OptionAPIURL(fake.URL()+"/"), slack.OptionHTTPClient(&http.Client{Timeout: 5 * time.Second}))
}

// slackClient is a second client on the bundle's fake Slack.
func (b *bundle) slackClient() *slack.Client { return newClient(b.fake) }

// channelOf and tsOf read a Slack card's ref, "channel/ts".
func channelOf(ref string) string { c, _, _ := strings.Cut(ref, "/"); return c }

func tsOf(ref string) string { _, ts, _ := strings.Cut(ref, "/"); return ts }

// onSlack is the surface the bot's cards are recorded under.
const onSlack = bot.SurfaceName
