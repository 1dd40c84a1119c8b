package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"time"

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
}

// CallbackView is where the newest callback delivery stands.
type CallbackView struct {
	State      store.CallbackState `json:"state"`
	Attempts   int                 `json:"attempts"`
	LastStatus *int                `json:"last_status"`
}

// DecisionView is the standing decision of the request's latest decided round.
type DecisionView struct {
	Verdict store.Verdict `json:"verdict"`
	By      string        `json:"by"`
	At      time.Time     `json:"at"`
	Via     string        `json:"via"`
	Round   int           `json:"round"`
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

// View reads the request's decision and execution and returns its representation.
func (s *Service) View(ctx context.Context, req store.Request) (View, error) {
	v := View{
		ID: req.ID, Key: req.Key, KeyShort: ShortKey(req.Key), Status: req.Status, Round: req.Round,
		RunID: req.RunID, Step: req.Step, Tool: req.Tool, Effect: req.Snapshot,
		Summary: req.Summary, Reason: req.Reason, RequestedBy: req.RequestedBy, RequestFor: req.RequestedFor,
		PayloadHash: req.PayloadHash, CreatedAt: req.CreatedAt.UTC(), ExpiresAt: req.ExpiresAt.UTC(),
		Version: req.Version,
	}
	if req.Status == store.RequestPending && req.Round == 1 {
		return v, nil // nothing decided or executed yet
	}
	// The request was read first, so Version never counts a change the
	// reads below do not show; a newer execution read below only makes a
	// long-poll wake once more.
	d, err := s.DB.LatestDecision(ctx, req.ID)
	switch {
	case err == nil:
		v.Decision = &DecisionView{Verdict: d.Verdict, By: d.DecidedBy, At: d.DecidedAt.UTC(), Via: d.Via, Round: d.Round}
	case !errors.Is(err, store.ErrNotFound):
		return View{}, err
	}
	e, err := s.DB.LatestExecution(ctx, req.ID)
	switch {
	case err == nil:
		v.Execution = executionView(e)
	case !errors.Is(err, store.ErrNotFound):
		return View{}, err
	}
	v.Settled = v.settled()
	cb, err := s.DB.LatestCallback(ctx, req.ID)
	switch {
	case err == nil:
		v.Callback = &CallbackView{State: cb.State, Attempts: cb.Attempts, LastStatus: cb.LastStatus}
	case !errors.Is(err, store.ErrNotFound):
		return View{}, err
	}
	return v, nil
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
