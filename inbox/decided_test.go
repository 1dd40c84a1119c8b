package inbox

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/store"
)

// decidedStore gives the store the read the inbox's "recently decided" list
// looks for, as the store's own query would answer it.
type decidedStore struct{ *store.DB }

func (s decidedStore) RecentlyDecided(ctx context.Context, limit int) ([]store.Request, error) {
	rows, err := s.Pool.Query(ctx, `SELECT id::text FROM requests WHERE status <> 'pending' ORDER BY updated_at DESC LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var reqs []store.Request
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		req, err := s.RequestByID(ctx, id)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, req)
	}
	return reqs, rows.Err()
}

// A store that can list recent decisions gets them on the inbox, with their
// state; one that cannot still serves the pending cards.
func TestInboxListsRecentlyDecided(t *testing.T) {
	t.Parallel()
	b := setup(t)
	approved := b.submit(t, &intentOpts{Summary: ptr("approved one")})
	rejected := b.submit(t, &intentOpts{Summary: ptr("rejected one")})
	b.submit(t, &intentOpts{Summary: ptr("still pending")})
	decide(t, b.server, decisionForm(approved, store.VerdictApprove))
	decide(t, b.server, decisionForm(rejected, store.VerdictReject))

	srv := b.serve(t, Options{Reviewer: reviewer, Store: decidedStore{b.db}})
	_, page := get(t, srv, DefaultPrefix+"/")
	_, decided, found := strings.Cut(page, "Recently decided")
	if !found {
		t.Fatalf("no recently decided list:\n%s", page)
	}
	for _, want := range []string{"approved one", "approve by " + reviewer + " via inbox", "ready (0 of 3)", "rejected one", "reject by " + reviewer} {
		if !strings.Contains(decided, want) {
			t.Errorf("recently decided lacks %q:\n%s", want, decided)
		}
	}
	if strings.Contains(decided, "still pending") {
		t.Error("a pending request is listed as decided")
	}
	if _, page := get(t, b.server, DefaultPrefix+"/"); strings.Contains(page, "Recently decided") || !strings.Contains(page, "still pending") {
		t.Errorf("the plain store's inbox:\n%s", page)
	}
}
