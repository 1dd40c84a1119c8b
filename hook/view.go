package hook

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/wire"
)

// viewOf reads the request's votes, decision, execution and callback and
// returns its representation. The request was read first, so Version never
// counts a change the reads after it do not show; a newer execution read
// after it only makes a long-poll wake once more.
func viewOf(ctx context.Context, s *approvals.Service, req store.Request) (wire.Request, error) {
	if !hasParts(req) {
		return viewFrom(s, req, store.RequestParts{}), nil
	}
	parts, err := s.DB.PartsOf(ctx, []store.Request{req})
	if err != nil {
		return wire.Request{}, err
	}
	return viewFrom(s, req, parts[0]), nil
}

// hasParts reports whether req's representation shows more than its row: a
// request pending in its first round that one approval decides has no
// vote, decision, execution or callback yet.
func hasParts(req store.Request) bool {
	return req.Status != store.RequestPending || req.Round > 1 || req.Policy.Needed() > 1
}

// policyView is the representation of the request's frozen policy: a
// policy that decided alone needs no approvals.
func policyView(s *approvals.Service, req store.Request) wire.RequestPolicy {
	p := wire.RequestPolicy{Verdict: string(req.Policy.Verdict), Approvals: req.Policy.Needed(), Approvers: s.Approvers(req),
		Tier: req.Policy.Tier, TierName: req.Policy.TierName, Version: req.Policy.Version}
	switch req.Policy.Verdict {
	case store.PolicyAllow, store.PolicyDeny:
		p.Approvals = 0
	case "":
		p.Verdict = string(store.PolicyAsk) // stored before verdicts existed
	}
	return p
}

// viewFrom is the representation of req with its parts.
func viewFrom(s *approvals.Service, req store.Request, parts store.RequestParts) wire.Request {
	v := wire.Request{
		ID: req.ID, Key: req.Key, KeyShort: approvals.ShortKey(req.Key), Status: wire.Status(req.Status), Round: req.Round,
		RunID: req.RunID, Step: req.Step, Tool: req.Tool, Effect: req.Snapshot,
		Summary: req.Summary, Reason: req.Reason, RequestedBy: req.RequestedBy, RequestedFor: req.RequestedFor,
		PayloadHash: req.PayloadHash, CreatedAt: req.CreatedAt.UTC(), ExpiresAt: req.ExpiresAt.UTC(),
		Version:      req.Version,
		Policy:       policyView(s, req),
		Votes:        voteViews(parts.Votes),
		SupersededBy: req.SupersededBy, Supersedes: req.Supersedes,
	}
	if v.Policy.Approvers == nil {
		v.Policy.Approvers = []string{}
	}
	if req.Status == store.RequestPending && req.Round == 1 {
		return v // nothing decided or executed yet
	}
	if d := parts.Decision; d != nil {
		v.Decision = &wire.Decision{Verdict: string(d.Verdict), By: d.DecidedBy, At: d.DecidedAt.UTC(), Via: d.Via, Round: d.Round, Reason: d.Reason,
			Retry: retryAfter(d)}
		v.Receipt = s.Receipt(req, d)
	}
	if parts.Execution != nil {
		v.Execution = executionView(*parts.Execution)
	}
	var exec store.ExecState
	if parts.Execution != nil {
		exec = parts.Execution.State
	}
	v.Settled = store.Settled(req.Status, exec)
	if cb := parts.Callback; cb != nil {
		v.Callback = &wire.Callback{State: string(cb.State), Attempts: cb.Attempts, LastStatus: cb.LastStatus}
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
	parts, err := s.DB.PartsOf(ctx, []store.Request{req})
	if err != nil {
		return nil, err
	}
	v := viewFrom(s, req, parts[0])
	if cb := parts[0].Callback; cb != nil && cb.ID == delivery.ID && cb.State == store.CallbackPending {
		v.Callback.State = string(store.CallbackDelivering)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func voteViews(votes []store.Vote) []wire.Vote {
	out := make([]wire.Vote, len(votes))
	for i, v := range votes {
		out[i] = wire.Vote{By: v.Voter, Verdict: string(v.Verdict), At: v.VotedAt.UTC(), Reason: v.Reason}
	}
	return out
}

func executionView(e store.Execution) *wire.Execution {
	ev := &wire.Execution{State: wire.ExecState(e.State), Attempts: e.Attempts}
	if e.LastCode != nil {
		ev.Code = *e.LastCode
	}
	if e.ProviderRef != nil {
		ev.ProviderRef = *e.ProviderRef
	}
	// A protocol without status numbers (MCP) records its answer with none.
	if e.ResponseStatus != nil || len(e.ResponseBody) > 0 {
		body := json.RawMessage(e.ResponseBody)
		if !json.Valid(body) {
			body, _ = json.Marshal(string(e.ResponseBody))
		}
		ev.Response = &wire.Response{Body: body}
		if e.ResponseStatus != nil {
			ev.Response.Status = *e.ResponseStatus
		}
	}
	return ev
}

// retryAfter is what a rejection means for an agent that would try again:
// a reviewer rejected the intent, a policy denies the write; "" for an
// approval.
func retryAfter(d *store.Decision) string {
	switch {
	case d.Verdict != store.VerdictReject:
		return ""
	case d.Via == approvals.ViaPolicy:
		return wire.RetryDenied
	}
	return wire.RetryRejected
}
