package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// View is a request as the HTTP hook represents it (README.md, "Agent API").
type View struct {
	ID          string              `json:"id"`
	Key         string              `json:"key"`
	KeyShort    string              `json:"key_short"`
	Status      store.RequestStatus `json:"status"`
	Round       int                 `json:"round"`
	RunID       string              `json:"run_id"`
	Step        json.RawMessage     `json:"step"`
	Tool        string              `json:"tool"`
	Effect      json.RawMessage     `json:"effect"`
	Summary     string              `json:"summary"`
	Reason      string              `json:"reason"`
	RequestedBy string              `json:"requested_by"`
	RequestFor  string              `json:"requested_for,omitempty"`
	PayloadHash string              `json:"payload_hash"`
	CreatedAt   time.Time           `json:"created_at"`
	ExpiresAt   time.Time           `json:"expires_at"`
	Decision    *DecisionView       `json:"decision"`
	Execution   *ExecutionView      `json:"execution"`
	// Settled is true once the outcome can no longer change (store.Settled).
	Settled bool `json:"settled"`
	// Version grows with every change of the fields above (store.Request.Version);
	// GET ?since=N answers once it is past N.
	Version int64 `json:"version"`
	// Callback is the request's newest callback delivery, if it has one.
	// Its progress does not move Version.
	Callback *CallbackView `json:"callback"`
	// Policy is how the request's rounds are decided, frozen at intake;
	// Votes are the current round's votes, oldest first.
	Policy RequestPolicyView `json:"policy"`
	Votes  []VoteView        `json:"votes"`
}

// CallbackView is where the newest callback delivery stands.
type CallbackView struct {
	State      store.CallbackState `json:"state"`
	Attempts   int                 `json:"attempts"`
	LastStatus *int                `json:"last_status"`

	id int64 // the delivery's row, for CallbackBody
}

// RequestPolicyView is how the request's rounds are decided, frozen at intake.
type RequestPolicyView struct {
	Approvals int      `json:"approvals"`
	Approvers []string `json:"approvers"`
	// Tier is the index of the tool's tier that matched the effect, or null
	// when none did and the tool's own policy applies.
	Tier *int `json:"tier"`
}

// VoteView is one reviewer's vote in the request's current round.
type VoteView struct {
	By      string        `json:"by"`
	Verdict store.Verdict `json:"verdict"`
	At      time.Time     `json:"at"`
	Reason  string        `json:"reason"`
}

// DecisionView is the standing decision of the request's latest decided round.
type DecisionView struct {
	Verdict store.Verdict `json:"verdict"`
	By      string        `json:"by"`
	At      time.Time     `json:"at"`
	Via     string        `json:"via"`
	Round   int           `json:"round"`
	Reason  string        `json:"reason"`
}

// ExecutionView is the request's latest execution.
type ExecutionView struct {
	State       store.ExecState `json:"state"`
	Attempts    int             `json:"attempts"`
	Code        string          `json:"code,omitempty"`
	ProviderRef string          `json:"provider_ref,omitempty"`
	Response    *ResponseView   `json:"response,omitempty"`
}

// ResponseView is the provider's last answer.
type ResponseView struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// viewOf reads the request's votes, decision, execution and callback and
// returns its representation. The request was read first, so Version never
// counts a change the reads after it do not show; a newer execution read
// after it only makes a long-poll wake once more.
func viewOf(ctx context.Context, s *approvals.Service, req store.Request) (View, error) {
	if !hasParts(req) {
		return viewFrom(s, req, store.RequestParts{}), nil
	}
	parts, err := s.DB.PartsOf(ctx, []store.Request{req})
	if err != nil {
		return View{}, err
	}
	return viewFrom(s, req, parts[0]), nil
}

// hasParts reports whether req's representation shows more than its row: a
// request pending in its first round that one approval decides has no
// vote, decision, execution or callback yet.
func hasParts(req store.Request) bool {
	return req.Status != store.RequestPending || req.Round > 1 || req.Policy.Needed() > 1
}

// viewFrom is the representation of req with its parts.
func viewFrom(s *approvals.Service, req store.Request, parts store.RequestParts) View {
	v := View{
		ID: req.ID, Key: req.Key, KeyShort: approvals.ShortKey(req.Key), Status: req.Status, Round: req.Round,
		RunID: req.RunID, Step: req.Step, Tool: req.Tool, Effect: req.Snapshot,
		Summary: req.Summary, Reason: req.Reason, RequestedBy: req.RequestedBy, RequestFor: req.RequestedFor,
		PayloadHash: req.PayloadHash, CreatedAt: req.CreatedAt.UTC(), ExpiresAt: req.ExpiresAt.UTC(),
		Version: req.Version,
		Policy:  RequestPolicyView{Approvals: req.Policy.Needed(), Approvers: s.Approvers(req), Tier: req.Policy.Tier},
		Votes:   voteViews(parts.Votes),
	}
	if v.Policy.Approvers == nil {
		v.Policy.Approvers = []string{}
	}
	if req.Status == store.RequestPending && req.Round == 1 {
		return v // nothing decided or executed yet
	}
	if d := parts.Decision; d != nil {
		v.Decision = &DecisionView{Verdict: d.Verdict, By: d.DecidedBy, At: d.DecidedAt.UTC(), Via: d.Via, Round: d.Round, Reason: d.Reason}
	}
	if parts.Execution != nil {
		v.Execution = executionView(*parts.Execution)
	}
	v.Settled = v.settled()
	if cb := parts.Callback; cb != nil {
		v.Callback = &CallbackView{State: cb.State, Attempts: cb.Attempts, LastStatus: cb.LastStatus, id: cb.ID}
	}
	return v
}

// CallbackBody returns the body of an attempt at delivery: the request's
// representation as the hook's JSON body at the time of the attempt. When
// the newest delivery is this one, its state says delivering, as the agent
// reading it finds it (its row says pending while the attempt holds it);
// a newer delivery is shown as it stands.
func CallbackBody(ctx context.Context, s *approvals.Service, delivery store.Callback) ([]byte, error) {
	req, err := s.DB.RequestByID(ctx, delivery.RequestID)
	if err != nil {
		return nil, err
	}
	v, err := viewOf(ctx, s, req)
	if err != nil {
		return nil, err
	}
	if v.Callback != nil && v.Callback.id == delivery.ID && v.Callback.State == store.CallbackPending {
		v.Callback.State = store.CallbackDelivering
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func voteViews(votes []store.Vote) []VoteView {
	out := make([]VoteView, len(votes))
	for i, v := range votes {
		out[i] = VoteView{By: v.Voter, Verdict: v.Verdict, At: v.VotedAt.UTC(), Reason: v.Reason}
	}
	return out
}

func executionView(e store.Execution) *ExecutionView {
	ev := &ExecutionView{State: e.State, Attempts: e.Attempts}
	if e.LastCode != nil {
		ev.Code = *e.LastCode
	}
	if e.ProviderRef != nil {
		ev.ProviderRef = *e.ProviderRef
	}
	if e.ResponseStatus != nil {
		body := json.RawMessage(e.ResponseBody)
		if !json.Valid(body) {
			body, _ = json.Marshal(string(e.ResponseBody))
		}
		ev.Response = &ResponseView{Status: *e.ResponseStatus, Body: body}
	}
	return ev
}

func (v View) settled() bool {
	var exec store.ExecState
	if v.Execution != nil {
		exec = v.Execution.State
	}
	return store.Settled(v.Status, exec)
}
