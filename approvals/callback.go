package approvals

import (
	"context"
	"log/slog"

	"github.com/countersign/countersign/store"
)

// Redrive sends the newest callback of a request agent may see once more,
// under its delivery id, and returns the request. hasCallback says whether
// the request's own agent (the one its callbacks go to) has a callback
// configured.
func (s *Service) Redrive(ctx context.Context, agent Agent, ref string, hasCallback func(owner string) bool) (store.Request, error) {
	req, err := s.Get(ctx, agent, ref)
	if err != nil {
		return store.Request{}, err
	}
	if !hasCallback(req.RequestedBy) {
		return store.Request{}, ErrNoCallback
	}
	cb, ok, err := s.DB.RedriveCallback(ctx, req.ID)
	if err != nil {
		return store.Request{}, err
	}
	if !ok {
		return store.Request{}, ErrNoDelivery
	}
	s.Logger.Info("callback redriven", slog.String("key", req.Key), slog.String("agent", agent.Name),
		slog.String("delivery", cb.DeliveryID), slog.String("event", string(cb.Event)))
	return req, nil
}
