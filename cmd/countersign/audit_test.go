package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store"
)

func runAudit(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"audit"}, args...), envFrom(env), nil, &out, &errOut)
	return code, out.String(), errOut.String()
}

// audit verify exits 0 on an intact trail and 1 naming the first event
// that does not match once the owner of the file edits one.
func TestAuditVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := map[string]string{"COUNTERSIGN_DATA_DIR": t.TempDir()}
	if code, _, stderr := runAudit(t, env); code != 2 || !strings.Contains(stderr, "usage: countersign audit verify") {
		t.Errorf("audit without verify: exit %d: %s", code, stderr)
	}
	s, path, req, err := migratedStoreWithRequest(t, env, "wa_audit_cli")
	if err == nil {
		_, _, err = s.CancelRequest(ctx, req.ID, store.AgentActor("agent"), nil)
	}
	s.Close()
	if err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runAudit(t, env, "verify")
	if code != 0 || !strings.Contains(stdout, "audit intact: 2 events of 1 requests; last verified: event 2") || stderr != "" {
		t.Fatalf("audit verify: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}

	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, stmt := range []string{`DROP TRIGGER events_no_update`, `UPDATE events SET actor = 'U0CEO' WHERE id = 2`} {
		if _, err := raw.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	code, stdout, stderr = runAudit(t, env, "verify")
	want := fmt.Sprintf("event 2 (request %s, number 2, cancelled by U0CEO", req.ID)
	if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "edited") || !strings.Contains(stdout, "last intact: event 1") {
		t.Errorf("audit verify after an edit: exit %d, want 1 naming %q\nstdout: %s\nstderr: %s", code, want, stdout, stderr)
	}
}

// After a month is dropped, audit verify prints the checkpoint it verified,
// and names it once the owner of the file edits it.
func TestAuditVerifyChecksCheckpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := map[string]string{"COUNTERSIGN_DATA_DIR": t.TempDir()}
	s, path, req, err := migratedStoreWithRequest(t, env, "wa_audit_checkpoint")
	if err == nil {
		_, err = s.DropAudit(ctx, time.Now().AddDate(0, 2, 0)) // this month, ended in two months' time
	}
	if err == nil {
		err = s.AppendEvent(ctx, store.Event{RequestID: req.ID, Actor: "U1", Kind: "noted"})
	}
	s.Close()
	if err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runAudit(t, env, "verify")
	if code != 0 || !strings.Contains(stdout, "audit intact: 1 events of 1 requests") ||
		!strings.Contains(stdout, "1 checkpoints of dropped months intact; 1 requests continue from one") {
		t.Fatalf("audit verify after a drop: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}

	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, stmt := range []string{`DROP TRIGGER audit_checkpoints_no_update`, `UPDATE audit_checkpoints SET dropped_by = 'nobody'`} {
		if _, err := raw.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	code, _, stderr = runAudit(t, env, "verify")
	if code != 1 || !strings.Contains(stderr, "checkpoint 1 (events_"+time.Now().UTC().Format("200601")) || !strings.Contains(stderr, "edited") {
		t.Errorf("audit verify after a checkpoint was edited: exit %d\nstderr: %s", code, stderr)
	}
}

// migratedStoreWithRequest migrates the embedded store env names, opens it
// and stores one request under key; the caller closes the store.
func migratedStoreWithRequest(t *testing.T, env map[string]string, key string) (store.Store, string, store.Request, error) {
	t.Helper()
	if code, _, stderr := runMigrate(t, env); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr)
	}
	cfg, err := config.Load(envFrom(env))
	if err != nil {
		t.Fatal(err)
	}
	s, path, err := openStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _, err := s.InsertRequest(context.Background(), store.NewRequest{Key: key, BasisHash: "sha256:b", RunID: "r", Step: []byte(`1`),
		Tool: "t", Snapshot: []byte(`{}`), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: time.Hour})
	return s, path, req, err
}
