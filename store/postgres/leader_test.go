package postgres_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// candidates starts n replicas' leadership on one database, each through a
// pool of its own, as n serve processes would.
func candidates(t *testing.T, url string, n int) []*postgres.Leader {
	t.Helper()
	ctx := context.Background()
	var out []*postgres.Leader
	for range n {
		d, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		l := d.Leader(slog.New(slog.DiscardHandler))
		if err := l.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Stop(ctx) })
		out = append(out, l)
	}
	return out
}

// leaders returns the indexes of the candidates that lead.
func leaders(ls []*postgres.Leader) []int {
	var out []int
	for i, l := range ls {
		if _, leading := l.Term(); leading {
			out = append(out, i)
		}
	}
	return out
}

// waitForOneLeader waits up to within for exactly one leader among ls and
// returns it, having checked that no second one appears meanwhile.
func waitForOneLeader(t *testing.T, ls []*postgres.Leader, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := leaders(ls)
		if len(got) > 1 {
			t.Fatalf("replicas %v all lead", got)
		}
		if len(got) == 1 {
			return got[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica leads within %v", within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitForChecks waits until every one of ls has checked the lock once more.
func waitForChecks(t *testing.T, ls []*postgres.Leader) {
	t.Helper()
	before := make([]int64, len(ls))
	for i, l := range ls {
		before[i] = l.Checks()
	}
	deadline := time.Now().Add(3 * postgres.LeaderCheckInterval)
	for i, l := range ls {
		for l.Checks() <= before[i] {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d made no check within %v", i, 3*postgres.LeaderCheckInterval)
			}
			time.Sleep(20 * time.Millisecond) // polling interval, not a wait for an event
		}
	}
}

func TestOneReplicaLeadsAndAStoppedLeaderHandsOn(t *testing.T) {
	t.Parallel()
	url := storetest.NewURL(t)
	ls := candidates(t, url, 3)
	first := waitForOneLeader(t, ls, 5*time.Second)
	// Through several checks by every replica, still one leader, the same one.
	for range 3 {
		waitForChecks(t, ls)
		if got := leaders(ls); len(got) != 1 || got[0] != first {
			t.Fatalf("leaders %v, want only %d", got, first)
		}
	}
	term, _ := ls[first].Term()
	stopped := time.Now()
	if err := ls[first].Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if term.Err() == nil {
		t.Fatal("the stopped leader's term is not cancelled")
	}
	rest := append(append([]*postgres.Leader{}, ls[:first]...), ls[first+1:]...)
	waitForOneLeader(t, rest, 5*time.Second)
	t.Logf("handed on in %v", time.Since(stopped).Round(time.Millisecond))
}

// A leader whose session the server ends (a killed process, a network cut
// the server noticed) steps down, and another replica leads within 5 s.
func TestALeaderWhoseSessionEndsStepsDown(t *testing.T) {
	t.Parallel()
	url := storetest.NewURL(t)
	ls := candidates(t, url, 2)
	first := waitForOneLeader(t, ls, 5*time.Second)
	term, _ := ls[first].Term()

	admin, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var ended int
	// The session holding the sweep lock, whoever's it is.
	if err := admin.Pool.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if ended != 1 {
		t.Fatalf("%d sessions held the sweep lock, want 1", ended)
	}
	select {
	case <-term.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the leader whose session ended still leads after 5 s")
	}
	// Either replica may lead next (the old one reconnects and tries too);
	// one must, within 5 s.
	waitForOneLeader(t, ls, 5*time.Second)
}
