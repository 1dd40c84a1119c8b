package embedded

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/countersign/countersign/store"
)

// ClaimOutbox leases up to limit due deliveries, oldest first: their
// next_attempt_at moves lease into the future, so another worker skips them
// until the lease runs out. Each claim counts as an attempt.
func (s *Store) ClaimOutbox(ctx context.Context, limit int, lease time.Duration) (claimed []store.OutboxRow, err error) {
	err = s.write(ctx, func(tx *writeTx) error {
		now := micros(clock(nil))
		rows, err := tx.QueryContext(ctx, `
UPDATE outbox SET next_attempt_at = ?1 + ?2, attempts = attempts + 1
WHERE id IN (SELECT id FROM outbox WHERE state = 'pending' AND next_attempt_at <= ?1 ORDER BY next_attempt_at, id LIMIT ?3)
RETURNING id, kind, request_id, round, data, attempts, coalesce(last_error, ''), created_at`,
			now, lease.Microseconds(), limit)
		if err != nil {
			return fmt.Errorf("claiming outbox: %w", err)
		}
		claimed, err = collect(rows, func(row scanner) (store.OutboxRow, error) {
			var (
				o       store.OutboxRow
				raw     string
				created int64
			)
			if err := row.Scan(&o.ID, &o.Kind, &o.RequestID, &o.Round, &raw, &o.Attempts, &o.LastError, &created); err != nil {
				return store.OutboxRow{}, err
			}
			o.CreatedAt = fromMicros(created)
			var err error
			o.Data, err = decodeData(raw)
			return o, err
		})
		if err != nil {
			return fmt.Errorf("claiming outbox: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(claimed, func(i, j int) bool { return claimed[i].ID < claimed[j].ID })
	return claimed, nil
}

// MarkOutboxDelivered records a delivery that landed; note, if any, says why
// nothing had to be sent.
func (s *Store) MarkOutboxDelivered(ctx context.Context, id int64, note string) error {
	return s.updateOutbox(ctx, id, "marking outbox %d delivered: %w", `UPDATE outbox SET state = 'delivered', delivered_at = ?2,
	last_error = nullif(?3, '') WHERE id = ?1 AND state = 'pending'`, micros(clock(nil)), note)
}

// MarkOutboxFailed records a delivery that can never land, with its reason.
func (s *Store) MarkOutboxFailed(ctx context.Context, id int64, reason string) error {
	return s.updateOutbox(ctx, id, "marking outbox %d failed: %w", `UPDATE outbox SET state = 'failed', last_error = ?2
	WHERE id = ?1 AND state = 'pending'`, reason)
}

// RetryOutbox puts a delivery back for another try after delay. attempted
// says whether Slack was called this time; a delivery only postponed gives
// its claim back and keeps the last error of a real attempt.
func (s *Store) RetryOutbox(ctx context.Context, id int64, delay time.Duration, reason string, attempted bool) error {
	inc := -1
	if attempted {
		inc = 0
	}
	return s.updateOutbox(ctx, id, "rescheduling outbox %d: %w", `UPDATE outbox SET next_attempt_at = ?2,
	attempts = max(attempts + ?3, 0),
	last_error = CASE WHEN ?3 < 0 THEN last_error ELSE nullif(?4, '') END WHERE id = ?1 AND state = 'pending'`,
		micros(clock(nil).Add(delay)), inc, reason)
}

// updateOutbox runs one statement on outbox row id (parameter ?1).
func (s *Store) updateOutbox(ctx context.Context, id int64, errFormat, query string, args ...any) error {
	return s.write(ctx, func(tx *writeTx) error {
		if _, err := tx.ExecContext(ctx, query, append([]any{id}, args...)...); err != nil {
			return fmt.Errorf(errFormat, id, err)
		}
		return nil
	})
}

// PostPending reports whether a post of the request round's card is still
// waiting to be delivered.
func (s *Store) PostPending(ctx context.Context, requestID string, round int) (bool, error) {
	id, _ := canonicalID(requestID)
	var pending bool
	if err := s.reader.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM outbox
	WHERE request_id = ? AND round = ? AND kind = 'post_card' AND state = 'pending')`, id, round).Scan(&pending); err != nil {
		return false, fmt.Errorf("reading outbox: %w", translate(err))
	}
	return pending, nil
}

// OtherPostRows reports whether the round of row's request has post rows
// besides row, in any state: an earlier one may have posted the card.
func (s *Store) OtherPostRows(ctx context.Context, row store.OutboxRow) (bool, error) {
	id, _ := canonicalID(row.RequestID)
	var others bool
	if err := s.reader.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM outbox
	WHERE request_id = ? AND round = ? AND kind = 'post_card' AND id <> ?)`, id, row.Round, row.ID).Scan(&others); err != nil {
		return false, fmt.Errorf("reading outbox: %w", translate(err))
	}
	return others, nil
}
