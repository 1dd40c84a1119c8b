package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
)

// Representation returns the request's representation as the hook's JSON
// body: what a callback carries.
func (s *Service) Representation(ctx context.Context, requestID string) ([]byte, error) {
	req, err := s.DB.RequestByID(ctx, requestID)
	if err != nil {
		return nil, err
	}
	v, err := s.View(ctx, req)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Redrive sends the newest callback of a request agent may see once more,
// under its delivery id. hasCallback says whether the request's own agent
// (the one its callbacks go to) has a callback configured.
func (s *Service) Redrive(ctx context.Context, agent Agent, ref string, hasCallback func(owner string) bool) (View, error) {
	req, err := s.Get(ctx, agent, ref)
	if err != nil {
		return View{}, err
	}
	if !hasCallback(req.RequestedBy) {
		return View{}, ErrNoCallback
	}
	cb, ok, err := s.DB.RedriveCallback(ctx, req.ID)
	if err != nil {
		return View{}, err
	}
	if !ok {
		return View{}, ErrNoDelivery
	}
	s.Logger.Info("callback redriven", slog.String("key", req.Key), slog.String("agent", agent.Name),
		slog.String("delivery", cb.DeliveryID), slog.String("event", string(cb.Event)))
	return s.View(ctx, req)
}
