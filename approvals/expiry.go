package approvals

import (
	"context"
	"log/slog"
)

// expiryBatch bounds one statement of the expiry sweep.
const expiryBatch = 500

// ExpireOnce moves every pending request past its request_ttl to expired
// (never to rejected), with its audit event and card update, and reports how
// many it moved. Safe to run on every replica at once: rows are claimed with
// SKIP LOCKED and the update re-checks the status.
func (s *Service) ExpireOnce(ctx context.Context) (int, error) {
	total := 0
	for {
		expired, err := s.DB.ExpireDue(ctx, s.now(), expiryBatch)
		if err != nil {
			return total, err
		}
		for _, req := range expired {
			s.Logger.Info("request expired", slog.String("key", req.Key))
		}
		total += len(expired)
		if len(expired) < expiryBatch {
			return total, nil
		}
	}
}
