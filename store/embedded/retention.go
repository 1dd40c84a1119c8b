package embedded

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/countersign/countersign/store"
)

func (e executor) Tombstones(ctx context.Context, keys []string) (map[string]store.Tombstone, error) {
	out := make(map[string]store.Tombstone, len(keys))
	for _, key := range keys {
		var t store.Tombstone
		_, err := scanInto("reading tombstone", e.read().QueryRowContext(ctx, q.Get("tombstone"), key), &t,
			&t.Key, &t.BasisHash, &t.Agent, &t.Status, at{t: &t.SettledAt}, at{t: &t.PrunedAt})
		if ok, err := found("reading tombstone", err); err != nil {
			return nil, err
		} else if ok {
			out[key] = t
		}
	}
	return out, nil
}

// SettledRequests needs no row locks: SQLite's one writer holds the whole
// database for the transaction.
func (e executor) SettledRequests(ctx context.Context, p store.SettledParams) ([]store.Prunable, error) {
	statuses, err := json.Marshal(p.FinalStatuses)
	if err != nil {
		return nil, err
	}
	states, err := json.Marshal(p.FinalStates)
	if err != nil {
		return nil, err
	}
	rows, err := e.tx.QueryContext(ctx, q.Get("settled_requests"), micros(p.Before), p.Limit, string(statuses),
		string(p.Approved), string(states), micros(e.tx.now))
	return collect("reading settled requests", func(row scanner) (store.Prunable, error) {
		var r store.Prunable
		return scanInto("reading settled request", row, &r, &r.RequestID, &r.Key, &r.BasisHash, &r.Agent, &r.Status,
			at{t: &r.SettledAt}, at{t: &r.PrunedAt})
	}, rows, err)
}

func (e executor) InsertTombstones(ctx context.Context, ts []store.Tombstone) error {
	for _, t := range ts {
		if err := e.tx.exec(ctx, "recording tombstone", q.Get("insert_tombstone"),
			t.Key, t.BasisHash, t.Agent, t.Status, micros(t.SettledAt), micros(e.tx.orClock(t.PrunedAt))); err != nil {
			return err
		}
	}
	return nil
}

// deleteRequestRows is delete_request_rows split into its statements, one
// table each, children first.
var deleteRequestRows = statements(q.Get("delete_request_rows"))

func (e executor) DeleteRequests(ctx context.Context, ids []string) error {
	for _, id := range ids {
		for _, stmt := range deleteRequestRows {
			if err := e.tx.exec(ctx, "deleting request", stmt, canonicalID(id)); err != nil {
				return err
			}
		}
	}
	return nil
}

// statements splits a query of several statements, each ending in ";" at
// the end of a line.
func statements(query string) []string {
	var out []string
	for _, s := range strings.Split(query, ";\n") {
		if s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), ";")); s != "" {
			out = append(out, s)
		}
	}
	return out
}
