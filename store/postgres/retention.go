package postgres

import (
	"context"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) Tombstones(ctx context.Context, keys []string) (map[string]store.Tombstone, error) {
	rows, err := e.db.Query(ctx, q.Get("tombstones"), keys)
	found, err := collect[store.Tombstone]("reading tombstones", rows, err)
	if err != nil {
		return nil, err
	}
	out := make(map[string]store.Tombstone, len(found))
	for _, t := range found {
		out[t.Key] = t
	}
	return out, nil
}

func (e executor) SettledRequests(ctx context.Context, p store.SettledParams) ([]store.Prunable, error) {
	statuses := make([]string, len(p.FinalStatuses))
	for i, s := range p.FinalStatuses {
		statuses[i] = string(s)
	}
	states := make([]string, len(p.FinalStates))
	for i, s := range p.FinalStates {
		states[i] = string(s)
	}
	rows, err := e.db.Query(ctx, q.Get("settled_requests"), p.Before, p.Limit, statuses, string(p.Approved), states)
	if err != nil {
		return nil, wrap("reading settled requests", err)
	}
	defer rows.Close()
	var out []store.Prunable
	for rows.Next() {
		var r store.Prunable
		if err := rows.Scan(&r.RequestID, &r.Key, &r.BasisHash, &r.Agent, &r.Status, &r.SettledAt, &r.PrunedAt); err != nil {
			return nil, wrap("reading settled requests", err)
		}
		out = append(out, r)
	}
	return out, wrap("reading settled requests", rows.Err())
}

func (e executor) InsertTombstones(ctx context.Context, ts []store.Tombstone) error {
	n := len(ts)
	keys, basis, agents, statuses, settled := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)
	for i, t := range ts {
		keys[i], basis[i], agents[i], statuses[i], settled[i] = t.Key, t.BasisHash, t.Agent, t.Status, t.SettledAt
	}
	_, err := e.db.Exec(ctx, q.Get("insert_tombstones"), keys, basis, agents, statuses, settled)
	return wrap("recording tombstones", err)
}

func (e executor) DeleteRequests(ctx context.Context, ids []string) error {
	_, err := e.db.Exec(ctx, q.Get("delete_requests"), ids)
	return wrap("deleting requests", err)
}

// noRequest sorts before every request id: the start of the audit walk.
const noRequest = "00000000-0000-0000-0000-000000000000"

func (e executor) AuditChain(ctx context.Context, after store.AuditCursor, limit int) ([]store.AuditEvent, error) {
	from := after.RequestID
	if from == "" {
		from = noRequest
	}
	rows, err := e.db.Query(ctx, q.Get("audit_chain"), from, after.Seq, limit)
	if err != nil {
		return nil, wrap("reading the audit chain", err)
	}
	defer rows.Close()
	var out []store.AuditEvent
	for rows.Next() {
		var a store.AuditEvent
		if err := rows.Scan(&a.ID, &a.RequestID, &a.Seq, &a.At, &a.Actor, &a.Kind, &a.Data, &a.PrevHash, &a.Hash); err != nil {
			return nil, wrap("reading the audit chain", err)
		}
		out = append(out, a)
	}
	return out, wrap("reading the audit chain", rows.Err())
}
