package drivertest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// listedRequest is a request of agent, tool and run created at at, open for
// a day.
func listedRequest(key, agent, tool, run string, at time.Time) store.NewRequest {
	p := newRequest(key, "sha256:b")
	p.RequestedBy, p.Tool, p.RunID, p.Now, p.TTL = agent, tool, run, &at, 24*time.Hour
	return p
}

// list returns the keys ListRequests answers for p, failing the test on error.
func list(t *testing.T, b *Backend, p store.ListRequestsParams) []string {
	t.Helper()
	reqs, err := b.ListRequests(context.Background(), p)
	if err != nil {
		t.Fatalf("ListRequests(%+v): %v", p, err)
	}
	keys := make([]string, len(reqs))
	for i, r := range reqs {
		keys[i] = r.Key
	}
	return keys
}

// newestFirst orders requests as a listing does: created_at, then id, both
// descending.
func newestFirst(a, b store.Request) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	switch {
	case a.ID > b.ID:
		return -1
	case a.ID < b.ID:
		return 1
	}
	return 0
}

func testListRequestsNewestFirstAndFiltered(t *testing.T, b *Backend) {
	ctx := context.Background()
	base := time.Now().UTC().Add(-time.Hour)
	minute := func(n int) time.Time { return base.Add(time.Duration(n) * time.Minute) }
	pending := insert(t, b, listedRequest("wa_list_pending", "agent", tool, "r1", minute(1)))
	cancelled := insert(t, b, listedRequest("wa_list_cancelled", "agent", "u", "r1", minute(2)))
	if _, ok, err := b.CancelRequest(ctx, cancelled.ID, "agent:agent", nil); err != nil || !ok {
		t.Fatalf("CancelRequest = %v, %v", ok, err)
	}
	rejected := insert(t, b, listedRequest("wa_list_rejected", "agent", tool, "r2", minute(3)))
	if _, _, ok, err := b.Decide(ctx, decide(rejected, store.VerdictReject, "U1")); err != nil || !ok {
		t.Fatalf("reject = %v, %v", ok, err)
	}
	approved := insert(t, b, listedRequest("wa_list_approved", "agent", tool, "r2", minute(4)))
	if _, _, ok, err := b.Decide(ctx, decide(approved, store.VerdictApprove, "U1")); err != nil || !ok {
		t.Fatalf("approve = %v, %v", ok, err)
	}
	insert(t, b, listedRequest("wa_list_other", "other", tool, "r1", minute(5)))
	// Two requests of one group commit share created_at: the id orders them.
	tied := []store.Request{
		insert(t, b, listedRequest("wa_list_tied_a", "agent", "u", "r3", minute(6))),
		insert(t, b, listedRequest("wa_list_tied_b", "agent", "u", "r3", minute(6))),
	}
	slices.SortFunc(tied, newestFirst)
	first, second := tied[0].Key, tied[1].Key

	agent := func(p store.ListRequestsParams) store.ListRequestsParams {
		p.RequestedBy = "agent"
		if p.Limit == 0 {
			p.Limit = 100
		}
		return p
	}
	yes, no := true, false
	for name, c := range map[string]struct {
		p    store.ListRequestsParams
		want []string
	}{
		"the agent's, newest first": {agent(store.ListRequestsParams{}),
			[]string{first, second, "wa_list_approved", "wa_list_rejected", "wa_list_cancelled", "wa_list_pending"}},
		"every agent's": {store.ListRequestsParams{Limit: 100},
			[]string{first, second, "wa_list_other", "wa_list_approved", "wa_list_rejected", "wa_list_cancelled", "wa_list_pending"}},
		"another agent's":      {store.ListRequestsParams{RequestedBy: "other", Limit: 100}, []string{"wa_list_other"}},
		"an agent with none":   {store.ListRequestsParams{RequestedBy: "nobody", Limit: 100}, []string{}},
		"pending":              {agent(store.ListRequestsParams{Status: store.RequestPending}), []string{first, second, "wa_list_pending"}},
		"cancelled":            {agent(store.ListRequestsParams{Status: store.RequestCancelled}), []string{"wa_list_cancelled"}},
		"expired":              {agent(store.ListRequestsParams{Status: store.RequestExpired}), []string{}},
		"a tool":               {agent(store.ListRequestsParams{Tool: "u"}), []string{first, second, "wa_list_cancelled"}},
		"a run":                {agent(store.ListRequestsParams{RunID: "r2"}), []string{"wa_list_approved", "wa_list_rejected"}},
		"a run, every agent's": {store.ListRequestsParams{RunID: "r1", Limit: 100}, []string{"wa_list_other", "wa_list_cancelled", "wa_list_pending"}},
		"settled":              {agent(store.ListRequestsParams{Settled: &yes}), []string{"wa_list_rejected", "wa_list_cancelled"}},
		"not settled":          {agent(store.ListRequestsParams{Settled: &no}), []string{first, second, "wa_list_approved", "wa_list_pending"}},
		"not settled, every agent's": {store.ListRequestsParams{Settled: &no, Limit: 100},
			[]string{first, second, "wa_list_other", "wa_list_approved", "wa_list_pending"}},
		"pending of a tool":        {agent(store.ListRequestsParams{Status: store.RequestPending, Tool: tool}), []string{"wa_list_pending"}},
		"approved, not settled":    {agent(store.ListRequestsParams{Status: store.RequestApproved, Settled: &no}), []string{"wa_list_approved"}},
		"approved and settled":     {agent(store.ListRequestsParams{Status: store.RequestApproved, Settled: &yes}), []string{}},
		"a tool and a run":         {agent(store.ListRequestsParams{Tool: tool, RunID: "r1"}), []string{"wa_list_pending"}},
		"limited":                  {agent(store.ListRequestsParams{Limit: 2}), []string{first, second}},
		"no limit lists nothing":   {store.ListRequestsParams{RequestedBy: "agent"}, []string{}},
		"a run holding NUL":        {agent(store.ListRequestsParams{RunID: "r\x001"}), []string{}},
		"after a request":          {agent(store.ListRequestsParams{After: &store.RequestPosition{CreatedAt: approved.CreatedAt, ID: approved.ID}}), []string{"wa_list_rejected", "wa_list_cancelled", "wa_list_pending"}},
		"after the first of a tie": {agent(store.ListRequestsParams{After: ptr(store.PositionOf(tied[0]))}), []string{second, "wa_list_approved", "wa_list_rejected", "wa_list_cancelled", "wa_list_pending"}},
		"after, filtered":          {agent(store.ListRequestsParams{Status: store.RequestPending, After: ptr(store.PositionOf(tied[1]))}), []string{"wa_list_pending"}},
		"after the last":           {agent(store.ListRequestsParams{After: ptr(store.PositionOf(pending))}), []string{}},
	} {
		if got := list(t, b, c.p); !slices.Equal(got, c.want) {
			t.Errorf("%s: ListRequests = %v, want %v", name, got, c.want)
		}
	}
}

// The settled filter is store.Settled on every state a request can reach:
// each request is listed by exactly one of settled and not settled, the one
// Settled says of its status and latest execution.
func testListRequestsSettledIsSettled(t *testing.T, b *Backend) {
	ctx := context.Background()
	exec := func(query string, args ...any) {
		t.Helper()
		if err := b.Exec(query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	// A request sent back to review: its latest execution is superseded.
	reopened, _ := approved(t, b, "wa_settled_reopened")
	c := claimOne(t, b, "w")
	if _, ok, err := b.Supersede(ctx, store.SupersedeParams{ExecutionID: c.ID, Attempt: c.Attempts, Worker: "w",
		Code: "approval_expired", RequestTTL: time.Hour}); err != nil || !ok {
		t.Fatalf("Supersede = %v, %v", ok, err)
	}
	expiring := newRequest("wa_settled_expired", "sha256:b")
	expiring.TTL = time.Second
	insert(t, b, expiring)
	later := time.Now().Add(time.Minute)
	if reqs, err := b.ExpireDue(ctx, &later, 10); err != nil || len(reqs) != 1 {
		t.Fatalf("ExpireDue = %d, %v", len(reqs), err)
	}
	insertRequest(t, b, "wa_settled_pending")
	if _, _, ok, err := b.Decide(ctx, decide(insertRequest(t, b, "wa_settled_rejected"), store.VerdictReject, "U1")); err != nil || !ok {
		t.Fatalf("reject = %v, %v", ok, err)
	}
	if _, ok, err := b.CancelRequest(ctx, insertRequest(t, b, "wa_settled_cancelled").ID, "agent:agent", nil); err != nil || !ok {
		t.Fatalf("cancel = %v, %v", ok, err)
	}
	for _, state := range []store.ExecState{store.ExecReady, store.ExecClaimed, store.ExecSucceeded, store.ExecFailed,
		store.ExecUnknown, store.ExecNeedsReview} {
		req, _ := approved(t, b, "wa_settled_"+string(state))
		exec("UPDATE executions SET state = $1 WHERE request_id = $2", string(state), req.ID)
	}
	all, err := b.ListRequests(ctx, store.ListRequestsParams{RequestedBy: "agent", Limit: 100})
	if err != nil || len(all) != 11 || !slices.ContainsFunc(all, func(r store.Request) bool { return r.ID == reopened.ID }) {
		t.Fatalf("ListRequests = %d requests, %v; want the 11 made here", len(all), err)
	}
	yes, no := true, false
	settled := list(t, b, store.ListRequestsParams{RequestedBy: "agent", Settled: &yes, Limit: 100})
	unsettled := list(t, b, store.ListRequestsParams{RequestedBy: "agent", Settled: &no, Limit: 100})
	for _, req := range all {
		var state store.ExecState
		e, err := b.LatestExecution(ctx, req.ID)
		if err == nil {
			state = e.State
		}
		want := store.Settled(req.Status, state)
		if slices.Contains(settled, req.Key) != want || slices.Contains(unsettled, req.Key) == want {
			t.Errorf("%s (%s, execution %q): settled lists it %v, not settled %v; Settled says %v",
				req.Key, req.Status, state, slices.Contains(settled, req.Key), slices.Contains(unsettled, req.Key), want)
		}
	}
	if len(settled)+len(unsettled) != len(all) {
		t.Errorf("settled %v and not settled %v together are not the %d requests", settled, unsettled, len(all))
	}
}

// settled = false pages through exactly the unsettled requests, each once
// and in listing order, an agent's and every agent's: the pending ones (one
// of them sent back to review, its execution superseded) and the approved
// ones whose execution is live in any of its states (one approved again
// after a supersede, its latest execution live and the one before not).
func testListRequestsNotSettledPagesInOrder(t *testing.T, b *Backend) {
	ctx := context.Background()
	base := time.Now().UTC().Add(-time.Hour)
	n := 0
	request := func(key, agent string) store.Request {
		t.Helper()
		n++
		return insert(t, b, listedRequest(key, agent, tool, "r", base.Add(time.Duration(n)*time.Minute)))
	}
	approve := func(req store.Request) {
		t.Helper()
		if _, _, ok, err := b.Decide(ctx, decide(req, store.VerdictApprove, "U1")); err != nil || !ok {
			t.Fatalf("approve %s = %v, %v", req.Key, ok, err)
		}
	}
	supersede := func() {
		t.Helper()
		c := claimOne(t, b, "w")
		if _, ok, err := b.Supersede(ctx, store.SupersedeParams{ExecutionID: c.ID, Attempt: c.Attempts, Worker: "w",
			Code: "approval_expired", RequestTTL: time.Hour}); err != nil || !ok {
			t.Fatalf("Supersede = %v, %v", ok, err)
		}
	}
	executing := func(key, agent string, state store.ExecState) {
		t.Helper()
		req := request(key, agent)
		approve(req)
		if err := b.Exec("UPDATE executions SET state = $1 WHERE request_id = $2", string(state), req.ID); err != nil {
			t.Fatal(err)
		}
	}

	// Each claim takes the only ready execution: those sent back come first.
	approve(request("wa_unsettled_reopened", "agent"))
	supersede()
	again := request("wa_unsettled_approved_again", "agent")
	approve(again)
	supersede()
	executing("wa_unsettled_ready", "agent", store.ExecReady)
	executing("wa_unsettled_succeeded", "agent", store.ExecSucceeded)
	executing("wa_unsettled_other_review", "other", store.ExecNeedsReview)
	executing("wa_unsettled_claimed", "agent", store.ExecClaimed)
	executing("wa_unsettled_failed", "agent", store.ExecFailed)
	request("wa_unsettled_pending", "agent")
	executing("wa_unsettled_unknown", "agent", store.ExecUnknown)
	if _, _, ok, err := b.Decide(ctx, decide(request("wa_unsettled_rejected", "agent"), store.VerdictReject, "U1")); err != nil || !ok {
		t.Fatalf("reject = %v, %v", ok, err)
	}
	executing("wa_unsettled_review", "agent", store.ExecNeedsReview)
	executing("wa_unsettled_other_succeeded", "other", store.ExecSucceeded)
	if _, ok, err := b.CancelRequest(ctx, request("wa_unsettled_cancelled", "agent").ID, "agent:agent", nil); err != nil || !ok {
		t.Fatalf("cancel = %v, %v", ok, err)
	}
	request("wa_unsettled_other_pending", "other")
	again, err := b.RequestByID(ctx, again.ID)
	if err != nil {
		t.Fatal(err)
	}
	approve(again)

	no := false
	for _, c := range []struct {
		agent string
		want  []string
	}{
		{"agent", []string{"wa_unsettled_review", "wa_unsettled_unknown", "wa_unsettled_pending", "wa_unsettled_claimed",
			"wa_unsettled_ready", "wa_unsettled_approved_again", "wa_unsettled_reopened"}},
		{"", []string{"wa_unsettled_other_pending", "wa_unsettled_review", "wa_unsettled_unknown", "wa_unsettled_pending",
			"wa_unsettled_claimed", "wa_unsettled_other_review", "wa_unsettled_ready", "wa_unsettled_approved_again",
			"wa_unsettled_reopened"}},
	} {
		for _, limit := range []int{2, 3, 100} {
			var got []string
			var after *store.RequestPosition
			for page := 0; page <= len(c.want); page++ {
				reqs, err := b.ListRequests(ctx, store.ListRequestsParams{RequestedBy: c.agent, Settled: &no, After: after, Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				if len(reqs) == 0 {
					break
				}
				for _, r := range reqs {
					got = append(got, r.Key)
				}
				after = ptr(store.PositionOf(reqs[len(reqs)-1]))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("agent %q, pages of %d: not settled lists %v, want %v", c.agent, limit, got, c.want)
			}
		}
	}
}

// Paging through with the position of each page's last request lists every
// request that was there at the start exactly once, in order, while new
// ones arrive: some newer than the listing's start (never listed), some
// committed late with a created_at behind the page (listed when reached).
func testListRequestsPagesThroughWhileRequestsArrive(t *testing.T, b *Backend) {
	base := time.Now().UTC().Add(-time.Hour)
	var there []store.Request
	for i := range 20 {
		// Pairs share created_at, as requests of one group commit do.
		at := base.Add(time.Duration(i/2) * time.Minute)
		there = append(there, insert(t, b, listedRequest("wa_page_"+string(rune('a'+i)), "agent", tool, "r", at)))
	}
	insert(t, b, listedRequest("wa_page_other_agent", "other", tool, "r", base.Add(time.Minute)))
	slices.SortFunc(there, newestFirst)
	want := make([]string, len(there))
	for i, r := range there {
		want[i] = r.Key
	}

	var got, late []string
	var after *store.RequestPosition
	for page := 0; ; page++ {
		if page > 20 {
			t.Fatalf("still paging after %d pages: %v", page, got)
		}
		reqs, err := b.ListRequests(context.Background(), store.ListRequestsParams{RequestedBy: "agent", Limit: 3, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if len(reqs) == 0 {
			break
		}
		for _, r := range reqs {
			got = append(got, r.Key)
		}
		last := reqs[len(reqs)-1]
		after = ptr(store.PositionOf(last))
		// Requests arrive between pages: one newer than anything listed, and
		// one a minute behind this page's last, as from a group commit that
		// began earlier and committed just now.
		insert(t, b, listedRequest("wa_page_new_"+string(rune('a'+page)), "agent", tool, "r", time.Now().UTC()))
		if last.CreatedAt.After(base) {
			key := "wa_page_late_" + string(rune('a'+page))
			insert(t, b, listedRequest(key, "agent", tool, "r", last.CreatedAt.Add(-time.Second)))
			late = append(late, key)
		}
	}
	seen := map[string]int{}
	var original []string
	for _, key := range got {
		seen[key]++
		if seen[key] > 1 {
			t.Errorf("%s listed twice in %v", key, got)
		}
		if slices.Contains(want, key) {
			original = append(original, key)
		}
	}
	if !slices.Equal(original, want) {
		t.Errorf("the requests there at the start were listed as %v, want %v", original, want)
	}
	for _, key := range late {
		if seen[key] != 1 {
			t.Errorf("%s, committed behind the page, listed %d times", key, seen[key])
		}
	}
	for key := range seen {
		if strings.HasPrefix(key, "wa_page_new_") {
			t.Errorf("%s, newer than the listing's start, was listed", key)
		}
	}
}

func ptr[T any](v T) *T { return &v }
