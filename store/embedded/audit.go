package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/countersign/countersign/store"
)

// InsertEvents appends events, each chained to the last event of its
// request (store.AuditEvent) in the write transaction, which holds the
// whole database: no other event can come between the read and the insert.
func (e executor) InsertEvents(ctx context.Context, events []store.Event) error {
	for _, ev := range events {
		data, err := jsonData(ev.Data).Value()
		if err != nil {
			return err
		}
		a := store.AuditEvent{RequestID: canonicalID(ev.RequestID), At: fromMicros(micros(e.tx.orClock(ev.At))),
			Actor: ev.Actor, Kind: string(ev.Kind), Data: data.(string)}
		if err := e.tx.QueryRowContext(ctx, q.Get("next_event_id")).Scan(&a.ID); err != nil {
			return wrap("appending event "+string(ev.Kind), err)
		}
		if err := e.chain(ctx, &a); err != nil {
			return err
		}
		if err := e.tx.exec(ctx, "appending event "+string(ev.Kind), q.Get("insert_events"),
			a.ID, a.RequestID, micros(a.At), a.Actor, a.Kind, a.Data, a.Seq, a.PrevHash, a.Hash); err != nil {
			return err
		}
	}
	return nil
}

// chain sets a's place in its request's chain: after the last chained event.
func (e executor) chain(ctx context.Context, a *store.AuditEvent) error {
	var seq int
	var hash string
	err := e.tx.QueryRowContext(ctx, q.Get("chain_end"), a.RequestID).Scan(&seq, &hash)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return wrap("reading the audit chain", err)
	}
	a.Seq, a.PrevHash = seq+1, hash
	a.Hash = store.EventHash(*a)
	return nil
}

func (e executor) AuditChain(ctx context.Context, after store.AuditCursor, limit int) ([]store.AuditEvent, error) {
	rows, err := e.read().QueryContext(ctx, q.Get("audit_chain"), canonicalID(after.RequestID), after.Seq, limit)
	return collect("reading the audit chain", func(row scanner) (store.AuditEvent, error) {
		var a store.AuditEvent
		return scanInto("reading the audit chain", row, &a, &a.ID, &a.RequestID, &a.Seq, at{t: &a.At}, &a.Actor, &a.Kind,
			&a.Data, &a.PrevHash, &a.Hash)
	}, rows, err)
}

// chainUnhashed chains, once, the events written before the chain existed
// (migration 00012), in the order they were written.
func (s *Driver) chainUnhashed(ctx context.Context) error {
	return s.InTx(ctx, true, func(ex store.Executor) error {
		e := ex.(executor)
		rows, err := e.tx.QueryContext(ctx, q.Get("unchained_events"))
		unchained, err := collect("reading unchained events", func(row scanner) (store.AuditEvent, error) {
			var a store.AuditEvent
			return scanInto("reading unchained events", row, &a, &a.ID, &a.RequestID, at{t: &a.At}, &a.Actor, &a.Kind, &a.Data)
		}, rows, err)
		if err != nil {
			return err
		}
		for _, a := range unchained {
			if err := e.chain(ctx, &a); err != nil {
				return err
			}
			if err := e.tx.exec(ctx, "chaining event", q.Get("chain_event"), a.ID, a.Seq, a.PrevHash, a.Hash); err != nil {
				return fmt.Errorf("chaining event %d: %w", a.ID, err)
			}
		}
		return nil
	})
}
