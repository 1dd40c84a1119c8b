package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

func TestIntakeBatcherConcurrentInserts(t *testing.T) {
	forEachStore(t, func(t *testing.T, b *backend) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		batcher := store.NewIntakeBatcher(b, 2, 8)
		if err := batcher.Start(ctx); err != nil {
			t.Fatal(err)
		}

		// 40 distinct keys, each sent by 3 callers at once: 120 calls.
		const keys, callers = 40, 3
		type outcome struct {
			id       string
			inserted bool
			err      error
		}
		outcomes := make([][callers]outcome, keys)
		drivertest.Release(keys*callers, func(i int) {
			k, c := i/callers, i%callers
			res, err := batcher.Insert(ctx, newRequest(fmt.Sprintf("wa_batch_%02d", k), "sha256:b"))
			req, inserted := res.Request, res.Inserted
			outcomes[k][c] = outcome{req.ID, inserted, err}
		})
		for k := range keys {
			inserted := 0
			for c := range callers {
				o := outcomes[k][c]
				if o.err != nil {
					t.Fatalf("key %d caller %d: %v", k, c, o.err)
				}
				if o.id != outcomes[k][0].id {
					t.Errorf("key %d: callers got different ids", k)
				}
				if o.inserted {
					inserted++
				}
			}
			if inserted != 1 {
				t.Errorf("key %d: %d callers report inserted, want 1", k, inserted)
			}
		}
		if requests, events := b.Count(t, `SELECT count(*) FROM requests`), b.Count(t, `SELECT count(*) FROM events`); requests != keys || events != keys {
			t.Errorf("requests %d, events %d; want %d each", requests, events, keys)
		}

		if err := batcher.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := batcher.Insert(context.Background(), newRequest("wa_after_stop", "sha256:b")); err != store.ErrBatcherStopped {
			t.Errorf("Insert after Stop = %v, want ErrBatcherStopped", err)
		}
	})
}

// poisons are requests that no store can insert, each breaking the statement
// that carries it: a step that is not JSON everywhere, and on PostgreSQL text
// and jsonb holding U+0000.
func poisons(backend string) map[string]func(p *store.NewRequest) {
	out := map[string]func(p *store.NewRequest){
		"step not JSON": func(p *store.NewRequest) { p.Step = []byte(`{`) },
	}
	if backend == "postgres" {
		out["summary with NUL"] = func(p *store.NewRequest) { p.Summary = "credit\x00" }
		out["run_id with NUL"] = func(p *store.NewRequest) { p.RunID = "r\x00" }
		out["step with NUL"] = func(p *store.NewRequest) { p.Step = []byte(`"s\u0000"`) }
	}
	return out
}

// A batch with one request that cannot be stored still stores all the others:
// the failed group commit is retried member by member.
func TestIntakeBatchPoisonedMemberFailsAlone(t *testing.T) {
	forEachStore(t, func(t *testing.T, b *backend) {
		batcher := store.NewIntakeBatcher(b, 1, 16)
		for name, poison := range poisons(b.Name) {
			ps := make([]store.NewRequest, 8)
			for i := range ps {
				ps[i] = newRequest(fmt.Sprintf("wa_%s_%d", strings.ReplaceAll(name, " ", "_"), i), "sha256:b")
			}
			poison(&ps[3])
			results, errs := store.ServeBatch(batcher, ps)
			for i := range ps {
				switch {
				case i == 3 && errs[i] == nil:
					t.Errorf("%s: the poisoned request was stored", name)
				case i != 3 && (errs[i] != nil || !results[i].Inserted || results[i].Key != ps[i].Key):
					t.Errorf("%s: request %d = %s inserted %v, %v; want it inserted", name, i, results[i].Key, results[i].Inserted, errs[i])
				}
			}
		}
		want := 7 * len(poisons(b.Name))
		if requests, events := b.Count(t, `SELECT count(*) FROM requests`), b.Count(t, `SELECT count(*) FROM events`); requests != want || events != want {
			t.Errorf("requests %d, events %d; want %d each", requests, events, want)
		}
	})
}

// The same through the batcher's queue: poisoned inserts sent at the same
// moment as good ones fail alone.
func TestIntakeBatcherPoisonedInsertsFailAlone(t *testing.T) {
	forEachStore(t, func(t *testing.T, b *backend) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		batcher := store.NewIntakeBatcher(b, 1, 64)
		if err := batcher.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = batcher.Stop(context.Background()) })
		var kinds []func(p *store.NewRequest)
		for _, poison := range poisons(b.Name) {
			kinds = append(kinds, poison)
		}
		const good, bad = 40, 10
		errs := make([]error, good+bad)
		drivertest.Release(good+bad, func(i int) {
			p := newRequest(fmt.Sprintf("wa_mixed_%02d", i), "sha256:b")
			if i%5 == 4 {
				kinds[i/5%len(kinds)](&p)
			}
			_, errs[i] = batcher.Insert(ctx, p)
		})
		for i, err := range errs {
			if i%5 == 4 && err == nil {
				t.Errorf("poisoned insert %d was stored", i)
			}
			if i%5 != 4 && err != nil {
				t.Errorf("good insert %d: %v", i, err)
			}
		}
		if n := b.Count(t, `SELECT count(*) FROM requests`); n != good {
			t.Errorf("requests = %d, want %d", n, good)
		}
	})
}
