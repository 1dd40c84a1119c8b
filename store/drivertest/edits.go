package drivertest

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign/store"
)

// editOf is an approver's edit of orig by "U2": the same run, step and
// tool with another effect, under key, needing approvals.
func editOf(orig store.Request, key string, approvals int) store.EditParams {
	p := newRequest(key, "sha256:edited")
	p.Snapshot, p.PayloadHash = []byte(`{"a":2}`), "sha256:p2"
	p.Policy = store.Policy{Approvals: approvals}
	return store.EditParams{OriginalID: orig.ID, Round: orig.Round, PayloadHash: orig.PayloadHash,
		Editor: "U2", Via: "console", Edit: p, Changed: []string{"a"}, MaxAttempts: 3}
}

// An edit settles the original as edited and stores the edit as a new
// request, linked both ways by key, in one transaction: the editor's
// approval decides an edit that needs one, the original never gets an
// execution, and the audit names the editor and what changed.
func testEditSettlesTheOriginalAndApprovesTheEdit(t *testing.T, b *Backend) {
	ctx := context.Background()
	withCallbacks(t, b, "agent")
	orig := insertRequest(t, b, "wa_edit_orig")
	res, err := b.Edit(ctx, editOf(orig, "wa_edit_new", 1))
	if err != nil || !res.Open {
		t.Fatalf("Edit = %+v, %v", res, err)
	}
	if res.Original.Status != store.RequestEdited || res.Original.SupersededBy != "wa_edit_new" || res.Original.Version <= orig.Version {
		t.Errorf("original = %s superseded by %q version %d", res.Original.Status, res.Original.SupersededBy, res.Original.Version)
	}
	if !res.Decided || res.Edit.Status != store.RequestApproved || res.Edit.Supersedes != orig.Key || res.Decision.DecidedBy != "U2" {
		t.Errorf("edit = %s supersedes %q decided %v by %q", res.Edit.Status, res.Edit.Supersedes, res.Decided, res.Decision.DecidedBy)
	}
	stored, err := b.RequestByKey(ctx, orig.Key)
	if err != nil || stored.Status != store.RequestEdited || stored.SupersededBy != "wa_edit_new" || stored.Supersedes != "" {
		t.Errorf("stored original = %+v, %v", stored, err)
	}
	edit, err := b.RequestByKey(ctx, "wa_edit_new")
	if err != nil || edit.Supersedes != orig.Key || string(edit.Snapshot) != `{"a":2}` || edit.RequestedBy != "agent" {
		t.Errorf("stored edit = %+v, %v", edit, err)
	}
	if !store.Settled(stored.Status, "") {
		t.Error("an edited request is not settled")
	}
	if n := b.Count(t, "SELECT count(*) FROM executions WHERE request_id = '"+orig.ID+"'"); n != 0 {
		t.Errorf("the original has %d executions, want 0", n)
	}
	if n := b.Count(t, "SELECT count(*) FROM executions WHERE request_id = '"+edit.ID+"'"); n != 1 {
		t.Errorf("the edit has %d executions, want 1", n)
	}
	events, err := b.EventsFor(ctx, orig.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if last.Kind != store.EventEdited || last.Actor != "U2" || last.Data["superseded_by"] != "wa_edit_new" ||
		!slices.Equal(anyStrings(last.Data["changed"]), []string{"a"}) {
		t.Errorf("the original's last event = %+v", last)
	}
	if kinds := eventKinds(t, b, edit.ID); !slices.Equal(kinds, []string{"requested", "voted", "decided"}) {
		t.Errorf("the edit's events = %v", kinds)
	}
	if got := callbacksOf(t, b, orig.ID); !slices.Equal(got, []store.CallbackEvent{store.CallbackEdited}) {
		t.Errorf("the original's callbacks = %v, want request.edited", got)
	}
	if r := verify(t, b); r.Bad != nil {
		t.Errorf("the audit trail does not verify: %s", r.Problem)
	}
	// The original is decided for good: a late approval finds it closed.
	if _, _, ok, err := b.Decide(ctx, decide(orig, store.VerdictApprove, "U1")); err != nil || ok {
		t.Errorf("Decide of the edited original = %v, %v; want not decided", ok, err)
	}
}

// An edit that needs more approvals than the editor's waits for the rest,
// with the editor's vote counted; a second approver decides it.
func testEditThatNeedsMoreApprovalsWaits(t *testing.T, b *Backend) {
	ctx := context.Background()
	orig := insertRequest(t, b, "wa_edit_tier_orig")
	res, err := b.Edit(ctx, editOf(orig, "wa_edit_tier_new", 2))
	if err != nil || !res.Open || res.Decided {
		t.Fatalf("Edit = %+v, %v; want open and undecided", res, err)
	}
	if res.Edit.Status != store.RequestPending || len(res.Votes) != 1 || res.Votes[0].Voter != "U2" {
		t.Errorf("edit = %s with votes %+v", res.Edit.Status, res.Votes)
	}
	if n := b.Count(t, "SELECT count(*) FROM outbox WHERE kind = 'post_card' AND request_id = '"+res.Edit.ID+"'"); n != 1 {
		t.Errorf("%d card posts for the edit, want 1", n)
	}
	// The editor voting again changes nothing; another approver decides.
	again, err := b.Vote(ctx, decide(res.Edit, store.VerdictApprove, "U2"))
	if err != nil || again.Cast || again.Decided {
		t.Errorf("the editor's second vote = %+v, %v", again, err)
	}
	v, err := b.Vote(ctx, decide(res.Edit, store.VerdictApprove, "U3"))
	if err != nil || !v.Decided {
		t.Errorf("the second approver's vote = %+v, %v", v, err)
	}
}

// An edit of a request no longer open (decided, or shown with another
// payload hash), or whose key names a request already, writes nothing.
func testEditOfAClosedRequestWritesNothing(t *testing.T, b *Backend) {
	ctx := context.Background()
	decided, _ := approved(t, b, "wa_edit_closed")
	pending := insertRequest(t, b, "wa_edit_stale")
	insertRequest(t, b, "wa_edit_taken")
	before := b.Count(t, "SELECT count(*) FROM events")
	res, err := b.Edit(ctx, editOf(decided, "wa_edit_closed_new", 1))
	if err != nil || res.Open || res.Original.Status != store.RequestApproved {
		t.Errorf("Edit of a decided request = %+v, %v; want not open", res, err)
	}
	stale := editOf(pending, "wa_edit_stale_new", 1)
	stale.PayloadHash = "sha256:other"
	if res, err := b.Edit(ctx, stale); err != nil || res.Open {
		t.Errorf("Edit with a stale hash = %+v, %v; want not open", res, err)
	}
	if _, err := b.Edit(ctx, editOf(pending, "wa_edit_taken", 1)); !errors.Is(err, store.ErrEditKeyExists) {
		t.Errorf("Edit onto an existing key = %v, want ErrEditKeyExists", err)
	}
	for _, key := range []string{"wa_edit_closed_new", "wa_edit_stale_new"} {
		if _, err := b.RequestByKey(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("RequestByKey(%s) = %v, want ErrNotFound", key, err)
		}
	}
	if after := b.Count(t, "SELECT count(*) FROM events"); after != before {
		t.Errorf("refused edits wrote %d events", after-before)
	}
	if r, err := b.RequestByKey(ctx, pending.Key); err != nil || r.Status != store.RequestPending || r.SupersededBy != "" {
		t.Errorf("the request after refused edits = %+v, %v", r, err)
	}
}

// An edit racing approvals of the same request: exactly one of them wins,
// and the original runs only if the approval won.
func testEditRacingApprovalsOneWins(t *testing.T, b *Backend) {
	ctx := context.Background()
	for i := range 5 {
		orig := insertRequest(t, b, "wa_edit_race_"+string(rune('a'+i)))
		var won, edited atomic.Int32
		Release(4, func(j int) {
			if j == 0 {
				res, err := b.Edit(ctx, editOf(orig, orig.Key+"_new", 1))
				if err != nil {
					t.Errorf("Edit: %v", err)
				}
				if res.Open {
					won.Add(1)
					edited.Add(1)
				}
				return
			}
			_, _, ok, err := b.Decide(ctx, decide(orig, store.VerdictApprove, "U1"))
			if err != nil {
				t.Errorf("Decide: %v", err)
			}
			if ok {
				won.Add(1)
			}
		})
		if won.Load() != 1 {
			t.Fatalf("%d winners, want 1", won.Load())
		}
		execs := b.Count(t, "SELECT count(*) FROM executions WHERE request_id = '"+orig.ID+"'")
		_, editErr := b.RequestByKey(ctx, orig.Key+"_new")
		if edited.Load() == 1 && (execs != 0 || editErr != nil) {
			t.Errorf("the edit won, but the original has %d executions and the edit %v", execs, editErr)
		}
		if edited.Load() == 0 && (execs != 1 || !errors.Is(editErr, store.ErrNotFound)) {
			t.Errorf("the approval won, but the original has %d executions and the edit %v", execs, editErr)
		}
	}
}

// anyStrings reads a JSON array of strings as decoded into an event's data.
func anyStrings(v any) []string {
	var out []string
	switch v := v.(type) {
	case []any:
		for _, s := range v {
			str, _ := s.(string)
			out = append(out, str)
		}
	case []string:
		out = v
	}
	return out
}
