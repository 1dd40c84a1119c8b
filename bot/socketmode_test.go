package bot

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/storetest"
)

// recordingAcker keeps what a Socket Mode client would send back.
type recordingAcker struct {
	mu   sync.Mutex
	acks []any
}

func (r *recordingAcker) Ack(req socketmode.Request, payload ...any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var p any
	if len(payload) > 0 {
		p = payload[0]
	}
	r.acks = append(r.acks, p)
	return nil
}

// Socket Mode envelopes reach the same handlers as the HTTP routes.
func TestSocketModeServesTheSameHandlers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.NewDB(t)
	fake := bottest.New(t)
	client := slack.New("xoxb-test", slack.OptionAPIURL(fake.URL()+"/"), slack.OptionHTTPClient(&http.Client{Timeout: 5 * time.Second}))
	review, err := approvals.New(approvals.Config{DB: store.NewLedger(db, store.Options{}), Logger: discard(), Tools: map[string]approvals.Tool{
		"billing.credit": {Name: "billing.credit", Channel: "C1", Approvers: []string{"UANA"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	b := New(Config{Slack: client, Review: review, Cards: store.NewLedger(db, store.Options{}), Lookup: lookup.Service{DB: store.NewLedger(db, store.Options{})}, Logger: discard(), PostInterval: -1})
	req, _, err := review.Submit(ctx, "agent", approvals.Intent{RunID: "r", Step: json.RawMessage("1"), Tool: "billing.credit",
		Effect: json.RawMessage(`{"invoice":"inv_1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	value, _ := json.Marshal(decisionValue{RequestID: req.ID, Round: 1, PayloadHash: req.PayloadHash})
	acker := &recordingAcker{}

	payload := bottest.ClickPayload("UANA", "C1", ActionApprove, string(value))
	b.socketEvent(ctx, acker, socketmode.Event{Type: socketmode.EventTypeInteractive, Request: &socketmode.Request{Type: "interactive", EnvelopeID: "e1", Payload: payload}})
	var decisions int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM decisions`).Scan(&decisions); err != nil || decisions != 1 {
		t.Fatalf("decisions = %d (%v), want 1", decisions, err)
	}

	cmd := slack.SlashCommand{Command: "/countersign", Text: req.Key[:12], UserID: "USUP", ChannelID: "C1"}
	b.socketEvent(ctx, acker, socketmode.Event{Type: socketmode.EventTypeSlashCommand, Data: cmd, Request: &socketmode.Request{Type: "slash_commands", EnvelopeID: "e2"}})
	b.Wait()

	if len(acker.acks) != 2 {
		t.Fatalf("%d acks, want 2", len(acker.acks))
	}
	answer, ok := acker.acks[1].(commandAnswer)
	if !ok || answer.ResponseType != "ephemeral" || !strings.Contains(answer.Text, req.Key) {
		t.Fatalf("slash command ack = %#v", acker.acks[1])
	}
}

// A reject form submitted over Socket Mode is answered in the envelope's
// acknowledgement: a required reason left empty keeps the form open with the
// field's error; with a reason, the reject is recorded.
func TestSocketModeAnswersTheRejectForm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.NewDB(t)
	fake := bottest.New(t)
	client := slack.New("xoxb-test", slack.OptionAPIURL(fake.URL()+"/"), slack.OptionHTTPClient(&http.Client{Timeout: 5 * time.Second}))
	review, err := approvals.New(approvals.Config{DB: store.NewLedger(db, store.Options{}), Logger: discard(), Tools: map[string]approvals.Tool{
		"billing.credit": {Name: "billing.credit", Channel: "C1", Approvers: []string{"UANA"}, RejectReason: approvals.ReasonRequired},
	}})
	if err != nil {
		t.Fatal(err)
	}
	b := New(Config{Slack: client, Review: review, Cards: store.NewLedger(db, store.Options{}), Lookup: lookup.Service{DB: store.NewLedger(db, store.Options{})}, Logger: discard(), PostInterval: -1})
	req, _, err := review.Submit(ctx, "agent", approvals.Intent{RunID: "r", Step: json.RawMessage("1"), Tool: "billing.credit",
		Effect: json.RawMessage(`{"invoice":"inv_1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	value, _ := json.Marshal(decisionValue{RequestID: req.ID, Round: 1, PayloadHash: req.PayloadHash})
	acker := &recordingAcker{}
	interactive := func(id string, payload []byte) {
		b.socketEvent(ctx, acker, socketmode.Event{Type: socketmode.EventTypeInteractive, Request: &socketmode.Request{Type: "interactive", EnvelopeID: id, Payload: payload}})
	}
	interactive("e1", bottest.ClickPayload("UANA", "C1", ActionReject, string(value)))
	views := fake.OpenedViews()
	if len(views) != 1 {
		t.Fatalf("views opened = %d, want 1", len(views))
	}
	interactive("e2", bottest.SubmissionPayload("UANA", views[0], ReasonBlockID, ReasonActionID, ""))
	interactive("e3", bottest.SubmissionPayload("UANA", views[0], ReasonBlockID, ReasonActionID, "not ours"))
	b.Wait()
	if len(acker.acks) != 3 || acker.acks[0] != nil || acker.acks[2] != nil {
		t.Fatalf("acks = %#v", acker.acks)
	}
	if errs, ok := acker.acks[1].(json.RawMessage); !ok || !strings.Contains(string(errs), `"response_action":"errors"`) {
		t.Fatalf("empty reason's ack = %#v", acker.acks[1])
	}
	var reason string
	if err := db.Pool.QueryRow(ctx, `SELECT reason FROM decisions`).Scan(&reason); err != nil || reason != "not ours" {
		t.Fatalf("decision reason = %q (%v)", reason, err)
	}
}

// A Socket Mode connection that fails logs why (the underlying error, the
// attempt and the backoff), and a refused app token says which token to fix.
func TestSocketModeLogsTheCauseOfAConnectionProblem(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return out.Write(p)
	}), nil))
	b := New(Config{Slack: slack.New("xoxb-test"), Logger: logger, PostInterval: -1})
	b.socketEvent(context.Background(), &recordingAcker{}, socketmode.Event{Type: socketmode.EventTypeConnectionError,
		Data: &slack.ConnectionErrorEvent{Attempt: 3, Backoff: 2 * time.Second, ErrorObj: errors.New("dial tcp: connection refused")}})
	b.socketEvent(context.Background(), &recordingAcker{}, socketmode.Event{Type: socketmode.EventTypeInvalidAuth, Data: &slack.InvalidAuthEvent{}})
	mu.Lock()
	logged := out.String()
	mu.Unlock()
	for _, want := range []string{`error="dial tcp: connection refused"`, "attempt=3", "retry_in=2s", "Slack refused SLACK_APP_TOKEN (invalid_auth)"} {
		if !strings.Contains(logged, want) {
			t.Errorf("the log lacks %q:\n%s", want, logged)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
