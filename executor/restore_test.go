package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/embedded"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// The tools of the restore choreography, each with a provider of its own.
const (
	unawareTool = "billing.unaware" // ignores keys, has a verify URL
	awareTool   = "billing.aware"   // honours keys, has a verify URL
	blindTool   = "billing.blind"   // ignores keys, no verify URL
)

// restoreRig is the providers, and the review and executor on one store.
type restoreRig struct {
	providers map[string]*providertest.Provider
	tools     map[string]executor.Tool
}

func newRestoreRig(t *testing.T) *restoreRig {
	r := &restoreRig{providers: map[string]*providertest.Provider{}, tools: map[string]executor.Tool{}}
	for _, name := range []string{unawareTool, awareTool, blindTool} {
		p := providertest.New()
		p.Secret = []byte(secret)
		p.IgnoreKeys(name != awareTool)
		srv := providertest.Start(t, p)
		tool := executor.Tool{
			Method: "POST", URL: srv.URL + "/credits", Timeout: 2 * time.Second, KeyAware: name == awareTool,
			MaxAttempts: 3, ClaimTimeout: time.Minute, ApprovalTTL: 24 * time.Hour, VerifyAfter: time.Millisecond,
		}
		if name != blindTool {
			tool.Verify = &executor.Endpoint{URL: srv.URL + "/objects?key={key}"}
		}
		r.providers[name], r.tools[name] = p, tool
	}
	return r
}

// on builds the review and the executor on db.
func (r *restoreRig) on(t *testing.T, db store.Store) (*approvals.Service, *executor.Executor) {
	tools := map[string]approvals.Tool{}
	for name := range r.tools {
		tools[name] = approvals.Tool{Name: name, Approvers: []string{approver}, MaxAttempts: 3}
	}
	review := approvalstest.New(t, approvals.Config{DB: db, Tools: tools, Logger: slog.New(slog.DiscardHandler)})
	exec := executor.New(executor.Config{
		DB: db, Tools: r.tools, Secrets: [][]byte{[]byte(secret)}, Worker: "worker-a", BatchSize: 50, Concurrency: 8,
		Backoff: func(int) time.Duration { return 0 }, VerifyWindow: -1, Logger: testLogger(t),
	})
	return review, exec
}

func submitTo(t *testing.T, review *approvals.Service, tool, runID string) store.Request {
	t.Helper()
	req, _, err := review.Submit(context.Background(), "agent", approvals.Intent{
		RunID: runID, Step: json.RawMessage(`1`), Tool: tool,
		Effect:  json.RawMessage(`{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}`),
		Summary: "Credit 42.00 USD to inv_8841",
	})
	if err != nil {
		t.Fatalf("submitting: %v", err)
	}
	return req
}

func approveReq(t *testing.T, review *approvals.Service, req store.Request) {
	t.Helper()
	out, err := review.Decide(context.Background(), approvals.Decision{
		RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash,
		Verdict: store.VerdictApprove, DecidedBy: approver, Via: "slack",
	})
	if err != nil || !out.Created {
		t.Fatalf("approving %s: created=%v err=%v", req.Key, out.Created, err)
	}
}

// restoreStore is one store's backup and restore, as an operator runs them.
type restoreStore struct {
	open func(t *testing.T) store.Store
	// backup copies the store (closing it if it must) and returns it open.
	backup func(t *testing.T, s store.Store) store.Store
	// restore stops s, puts the backup back and marks it, and returns the
	// restored store.
	restore func(t *testing.T, s store.Store) store.Store
}

// The choreography of a restore: 10 pending intents per tool, a backup,
// all approved and sent (one POST each), an intent acknowledged and sent
// after the backup; then the copy is put back and the same requests are
// approved again and the lost intent replayed. Every write still reaches
// its provider once: key-unaware and key-aware tools with a verify URL
// find the write and succeed with nothing sent; a key-unaware tool without
// one goes to needs_review, unsent.
func testRestoreSendsNothingTwice(t *testing.T, rs restoreStore) {
	ctx := context.Background()
	rig := newRestoreRig(t)
	db := rs.open(t)
	review, _ := rig.on(t, db)
	var pending []store.Request
	for _, tool := range []string{unawareTool, awareTool, blindTool} {
		for i := range 10 {
			pending = append(pending, submitTo(t, review, tool, fmt.Sprintf("restore-%s-%d", tool, i)))
		}
	}

	db = rs.backup(t, db)
	review, exec := rig.on(t, db)
	for _, req := range pending {
		approveReq(t, review, req)
	}
	late := submitTo(t, review, unawareTool, "restore-late") // acknowledged after the backup
	approveReq(t, review, late)
	if _, err := exec.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	for _, req := range append(pending, late) {
		if n := rig.providers[req.Tool].Writes(req.Key); n != 1 {
			t.Fatalf("%s (%s) before the restore: %d POSTs, want 1", req.Key, req.Tool, n)
		}
	}

	db = rs.restore(t, db)
	review, exec = rig.on(t, db)
	for _, req := range pending {
		again, err := db.RequestByKey(ctx, req.Key)
		if err != nil || again.Status != store.RequestPending {
			t.Fatalf("%s in the copy: %v %v, want pending", req.Key, again.Status, err)
		}
		approveReq(t, review, again)
	}
	if _, err := db.RequestByKey(ctx, late.Key); err == nil {
		t.Fatal("the request acknowledged after the backup is in the copy")
	}
	replayed := submitTo(t, review, unawareTool, "restore-late") // the agent replays it: a new request
	if replayed.Key != late.Key || replayed.ID == late.ID {
		t.Fatalf("the replay is %s %s, want a new request under %s", replayed.ID, replayed.Key, late.Key)
	}
	approveReq(t, review, replayed)
	if _, err := exec.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	for _, req := range append(pending, replayed) {
		if n := rig.providers[req.Tool].Writes(req.Key); n != 1 {
			t.Errorf("%s (%s) after the restore: %d POSTs, want 1", req.Key, req.Tool, n)
		}
		e, err := db.LatestExecution(ctx, req.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := store.ExecSucceeded
		if req.Tool == blindTool {
			want = store.ExecNeedsReview
		}
		wantState(t, e, want)
	}
}

func TestRestoreSendsNothingTwiceEmbedded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, copyPath := filepath.Join(dir, "countersign.db"), filepath.Join(t.TempDir(), "backup.db")
	open := func(t *testing.T) store.Store {
		d, err := embedded.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		s := store.NewLedger(d, store.Options{})
		if _, err := s.Migrate(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	testRestoreSendsNothingTwice(t, restoreStore{
		open: open,
		backup: func(t *testing.T, s store.Store) store.Store {
			if err := embedded.Backup(context.Background(), path, copyPath); err != nil {
				t.Fatal(err)
			}
			return s
		},
		restore: func(t *testing.T, s store.Store) store.Store {
			// Refused while the store is open, as it is while serve runs.
			if _, err := embedded.Restore(context.Background(), copyPath, path, store.RestoreParams{Window: time.Hour}); err == nil {
				t.Fatal("restored over a store in use")
			}
			s.(*store.Ledger).Close()
			if _, err := embedded.Restore(context.Background(), copyPath, path, store.RestoreParams{Source: "backup.db", Window: time.Hour}); err != nil {
				t.Fatal(err)
			}
			return open(t)
		},
	})
}

func TestRestoreSendsNothingTwicePostgres(t *testing.T) {
	t.Parallel()
	url := storetest.NewURL(t)
	var copyURL string
	open := func(t *testing.T, url string) store.Store {
		d, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		s := store.NewLedger(d, store.Options{})
		t.Cleanup(s.Close)
		return s
	}
	testRestoreSendsNothingTwice(t, restoreStore{
		open: func(t *testing.T) store.Store { return open(t, url) },
		backup: func(t *testing.T, s store.Store) store.Store {
			s.(*store.Ledger).Close() // a template is copied only with no one connected
			copyURL = storetest.CloneURL(t, url)
			return open(t, url)
		},
		restore: func(t *testing.T, s store.Store) store.Store {
			s.(*store.Ledger).Close()
			restored := open(t, copyURL)
			// What countersign restore --postgres runs.
			if _, err := restored.(*store.Ledger).Migrate(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			if _, err := restored.MarkRestored(context.Background(), store.RestoreParams{Source: "postgres", Window: time.Hour}); err != nil {
				t.Fatal(err)
			}
			return restored
		},
	})
}
