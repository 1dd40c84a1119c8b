package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/storetest"
)

// anchorStore is one store under an anchor test: the command's
// environment, and the owner's way around the append-only triggers.
type anchorStore struct {
	name string
	env  map[string]string
	// asOwner runs statements on the store's database as its owner with
	// the triggers that guard the events out of the way, and puts them
	// back.
	asOwner func(t *testing.T, stmts ...string)
}

// anchorStores are both stores, each on a database of the test's own.
func anchorStores(t *testing.T) []anchorStore {
	dir, dbURL := t.TempDir(), storetest.NewURL(t)
	return []anchorStore{
		{name: "sqlite", env: map[string]string{"COUNTERSIGN_DATA_DIR": dir}, asOwner: sqliteOwner(dir)},
		{name: "postgres", env: map[string]string{"COUNTERSIGN_DATABASE_URL": dbURL}, asOwner: postgresOwner(dbURL)},
	}
}

// sqliteOwner runs statements on the embedded store in dir as whoever can
// write its file: the triggers that guard the events are dropped, and
// created again as they were after the statements.
func sqliteOwner(dir string) func(t *testing.T, stmts ...string) {
	return func(t *testing.T, stmts ...string) {
		t.Helper()
		ctx := context.Background()
		raw, err := sql.Open("sqlite", filepath.Join(dir, storeFile))
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		rows, err := raw.QueryContext(ctx, `SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN ('events_no_update', 'events_no_delete')`)
		if err != nil {
			t.Fatal(err)
		}
		var drops, creates []string
		for rows.Next() {
			var name, def string
			if err := rows.Scan(&name, &def); err != nil {
				t.Fatal(err)
			}
			drops, creates = append(drops, "DROP TRIGGER "+name), append(creates, def)
		}
		rows.Close()
		if len(drops) != 2 {
			t.Fatalf("the events' triggers: %v", drops)
		}
		for _, stmt := range append(append(drops, stmts...), creates...) {
			if _, err := raw.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	}
}

// postgresOwner runs statements on the PostgreSQL database at dbURL as its
// owner, in a session for which no trigger fires.
func postgresOwner(dbURL string) func(t *testing.T, stmts ...string) {
	return func(t *testing.T, stmts ...string) {
		t.Helper()
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		for _, stmt := range append([]string{`SET session_replication_role = replica`}, stmts...) {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	}
}

// withStore opens the store env names, migrated, for fn.
func withStore(t *testing.T, env map[string]string, fn func(s *store.Ledger)) {
	t.Helper()
	cfg, err := config.Load(envFrom(env))
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := openStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fn(s)
}

// newAuditedRequest stores a request under key with n-1 events after its
// first.
func newAuditedRequest(t *testing.T, s store.Store, key string, n int) store.Request {
	t.Helper()
	ctx := context.Background()
	req, _, err := s.InsertRequest(ctx, store.NewRequest{Key: key, BasisHash: "sha256:b", RunID: "r", Step: []byte(`1`),
		Tool: "t", Snapshot: []byte(`{}`), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < n; i++ {
		if err := s.AppendEvent(ctx, store.Event{RequestID: req.ID, Actor: "U1", Kind: "noted"}); err != nil {
			t.Fatal(err)
		}
	}
	return req
}

// rechain is what an owner who edited one of a request's events does next:
// the statements that compute its chain again from its first event.
func rechain(t *testing.T, env map[string]string, requestID string, edit func(*store.AuditEvent)) []string {
	t.Helper()
	var stmts []string
	withStore(t, env, func(s *store.Ledger) {
		events, err := s.AuditChain(context.Background(), store.AuditCursor{RequestID: requestID}, 100)
		if err != nil {
			t.Fatal(err)
		}
		prev := ""
		for i, e := range events {
			if e.RequestID != requestID {
				break
			}
			if i == 1 {
				edit(&e)
				stmts = append(stmts, fmt.Sprintf(`UPDATE events SET actor = '%s' WHERE id = %d`, e.Actor, e.ID))
			}
			e.PrevHash = prev
			e.Hash = store.EventHash(e)
			prev = e.Hash
			stmts = append(stmts, fmt.Sprintf(`UPDATE events SET prev_hash = '%s', hash = '%s' WHERE id = %d`, e.PrevHash, e.Hash, e.ID))
		}
	})
	return stmts
}

// The two tampers, on both stores, as the owner with the triggers
// out of the way: an event edited and its request's chain computed again,
// and the last events of a request deleted. audit verify passes both, as
// it must (the chains are whole); audit verify --anchor names each request.
func TestAuditVerifyAnchorNamesTamperedRequests(t *testing.T) {
	t.Parallel()
	for _, st := range anchorStores(t) {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			if code, _, stderr := runMigrate(t, st.env); code != 0 {
				t.Fatalf("migrate: exit %d: %s", code, stderr)
			}
			var edited, cut, grows store.Request
			withStore(t, st.env, func(s *store.Ledger) {
				edited = newAuditedRequest(t, s, "wa_anchor_edited", 3)
				cut = newAuditedRequest(t, s, "wa_anchor_cut", 4)
				grows = newAuditedRequest(t, s, "wa_anchor_grows", 1)
			})
			file := filepath.Join(t.TempDir(), "anchor.jsonl")

			code, stdout, stderr := runAudit(t, st.env, "anchor", file)
			var summary anchorSummary
			if code != 0 || json.Unmarshal([]byte(stdout), &summary) != nil || summary.Requests != 3 || summary.Events != 8 ||
				summary.Anchor != anchorFormat || summary.Checkpoint != nil || !isHexHash(summary.Digest) {
				t.Fatalf("audit anchor FILE: exit %d, summary %+v\nstdout: %s\nstderr: %s", code, summary, stdout, stderr)
			}
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if lines := strings.SplitAfter(string(raw), "\n"); len(lines) != 5 || lines[3] != stdout || lines[4] != "" {
				t.Errorf("the anchor file holds %q; want 3 heads, then the summary audit anchor printed", raw)
			}
			if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
				t.Errorf("the anchor file: %v, %v; want mode 0600", info.Mode(), err)
			}
			code, printed, _ := runAudit(t, st.env, "anchor")
			if lines := strings.Split(strings.TrimSuffix(printed, "\n"), "\n"); code != 0 || len(lines) != 4 ||
				!strings.Contains(lines[3], `"digest":"`+summary.Digest+`"`) {
				t.Errorf("audit anchor to stdout: exit %d\n%s\nwant the same heads and digest as the file", code, printed)
			}

			// Events written since the anchor change nothing it holds.
			withStore(t, st.env, func(s *store.Ledger) {
				if err := s.AppendEvent(context.Background(), store.Event{RequestID: grows.ID, Actor: "U1", Kind: "noted"}); err != nil {
					t.Fatal(err)
				}
			})
			code, stdout, stderr = runAudit(t, st.env, "verify", "--anchor", file)
			if code != 0 || !strings.Contains(stdout, "audit intact: 9 events of 3 requests") ||
				!strings.Contains(stdout, "holds: 3 requests' heads unchanged in their chains, 0 left with months dropped since") {
				t.Fatalf("audit verify --anchor, untouched: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}

			// An event edited, its chain computed again.
			st.asOwner(t, rechain(t, st.env, edited.ID, func(e *store.AuditEvent) { e.Actor = "U0CEO" })...)
			if code, stdout, stderr := runAudit(t, st.env, "verify"); code != 0 {
				t.Fatalf("audit verify after the chain was computed again: exit %d, but it cannot see that\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			code, stdout, stderr = runAudit(t, st.env, "verify", "--anchor", file)
			if want := "request " + edited.ID + ": its event number 3 has hash"; code != 1 || !strings.Contains(stderr, want) ||
				!strings.Contains(stderr, "the audit trail does not match the anchor") || !strings.Contains(stderr, "computed again") {
				t.Errorf("audit verify --anchor after the chain was computed again: exit %d, want 1 naming %q\nstdout: %s\nstderr: %s", code, want, stdout, stderr)
			}

			// The last two events of a request deleted.
			st.asOwner(t, fmt.Sprintf(`DELETE FROM events WHERE request_id = '%s' AND seq >= 3`, cut.ID))
			if code, stdout, stderr := runAudit(t, st.env, "verify"); code != 0 {
				t.Fatalf("audit verify after a chain's tail was deleted: exit %d, but it cannot see that\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			code, stdout, stderr = runAudit(t, st.env, "verify", "--anchor", file)
			want := "request " + cut.ID + ": its chain ends at number 2, where the anchor holds number 4: its last events were removed"
			if code != 1 || !strings.Contains(stdout, want) || !strings.Contains(stdout, "request "+edited.ID+": ") ||
				!strings.Contains(stderr, "2 of its 3 requests") {
				t.Errorf("audit verify --anchor after both tampers: exit %d, want 1 naming both (%q)\nstdout: %s\nstderr: %s", code, want, stdout, stderr)
			}
		})
	}
}

// verify --anchor reads the file whole before the database: a file that is
// not an anchor, cut short, or whose heads no longer match its digest is
// refused; a gzip-compressed one is read as such.
func TestAuditVerifyAnchorChecksTheFile(t *testing.T) {
	t.Parallel()
	env := map[string]string{"COUNTERSIGN_DATA_DIR": t.TempDir()}
	if code, _, stderr := runMigrate(t, env); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr)
	}
	withStore(t, env, func(s *store.Ledger) {
		newAuditedRequest(t, s, "wa_anchor_file_1", 2)
		newAuditedRequest(t, s, "wa_anchor_file_2", 1)
	})
	dir := t.TempDir()
	gz := filepath.Join(dir, "anchor.jsonl.gz")
	if code, stdout, stderr := runAudit(t, env, "anchor", gz); code != 0 {
		t.Fatalf("audit anchor FILE.gz: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	f, err := os.Open(gz)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("the .gz anchor is not gzip: %v", err)
	}
	plain, err := io.ReadAll(zr)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runAudit(t, env, "verify", "--anchor", gz); code != 0 || !strings.Contains(stdout, "holds: 2 requests' heads") {
		t.Errorf("audit verify --anchor FILE.gz: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}

	lines := strings.SplitAfter(string(plain), "\n")
	var head anchorHead
	if err := json.Unmarshal([]byte(lines[0]), &head); err != nil {
		t.Fatal(err)
	}
	otherHash := strings.Repeat("0", 64)
	for name, tc := range map[string]struct{ content, want string }{
		"edited head":   {strings.Replace(string(plain), head.Hash, otherHash, 1), "does not match its digest"},
		"dropped head":  {strings.Join(lines[1:], ""), "line 2: the line counts 2 requests, where the file holds 1 heads"},
		"cut short":     {strings.Join(lines[:2], ""), "ends after 2 lines without its summary line"},
		"heads swapped": {lines[1] + lines[0] + lines[2], "line 2: the line is not after the line before"},
		"not an anchor": {"requests: 2\n", "line 1: the line is not one JSON object"},
		"unknown field": {strings.Replace(string(plain), `"seq"`, `"sig":"x","seq"`, 1), "line 1: the line is not one JSON object"},
		"after summary": {string(plain) + lines[0], "goes on after its summary"},
		"empty":         {"", "ends after 0 lines without its summary line"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, stdout, stderr := runAudit(t, env, "verify", "--anchor", path); code != 1 || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%s: exit %d, want 1 saying %q before reading the database\nstdout: %s\nstderr: %s", name, code, tc.want, stdout, stderr)
		}
	}

	for _, args := range [][]string{{"verify", "--anchor"}, {"anchor", "a", "b"}, {"verify", "extra"}, {"anchors"}} {
		if code, _, stderr := runAudit(t, env, args...); code != 2 || !strings.Contains(stderr, "usage: countersign audit verify [--anchor FILE]") {
			t.Errorf("audit %q: exit %d, want 2 with the usage\n%s", args, code, stderr)
		}
	}
}

// An anchor is written atomically: a trail that does not verify leaves the
// file as it was, and a symlink at the file's name is replaced, never
// written through.
func TestAuditAnchorFileIsReplacedWholeOrNotAtAll(t *testing.T) {
	t.Parallel()
	env := map[string]string{"COUNTERSIGN_DATA_DIR": t.TempDir()}
	if code, _, stderr := runMigrate(t, env); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr)
	}
	var req store.Request
	withStore(t, env, func(s *store.Ledger) { req = newAuditedRequest(t, s, "wa_anchor_atomic", 2) })
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("not to be written\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "anchor.jsonl")
	if err := os.Symlink(target, file); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runAudit(t, env, "anchor", file); code != 0 {
		t.Fatalf("audit anchor: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if got, _ := os.ReadFile(target); string(got) != "not to be written\n" {
		t.Errorf("the anchor was written through the symlink: %q", got)
	}
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(file); err != nil || !info.Mode().IsRegular() || info.Mode().Perm() != 0o600 {
		t.Errorf("the anchor file: %v, %v; want a regular file, 0600", info.Mode(), err)
	}

	sqliteOwner(env["COUNTERSIGN_DATA_DIR"])(t, fmt.Sprintf(`UPDATE events SET actor = 'U0CEO' WHERE request_id = '%s' AND seq = 2`, req.ID))
	code, stdout, stderr := runAudit(t, env, "anchor", file)
	if code != 1 || !strings.Contains(stderr, "so no anchor was taken") || !strings.Contains(stderr, "edited") || stdout != "" {
		t.Errorf("audit anchor of an edited trail: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if after, _ := os.ReadFile(file); !bytes.Equal(after, before) {
		t.Errorf("the anchor file changed although no anchor was taken")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("left in the directory: %v", entries)
	}
}

// serve's anchor on retention.anchor_schedule: to the file, or the summary
// to the log; none while the trail does not verify.
func TestAuditAnchorerWritesTheFileOrLogs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := drivertest.SQLite.Open(t, true)
	req := newAuditedRequest(t, b, "wa_anchorer", 2)
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))

	logged := newAuditAnchorer(b, "", logger, prometheus.NewRegistry())
	if err := logged.runOnce(ctx); err != nil || !strings.Contains(logs.String(), `"msg":"audit anchor"`) ||
		!strings.Contains(logs.String(), `"requests":1,"events":2,"digest":"`) || testutil.ToFloat64(logged.at) == 0 {
		t.Fatalf("anchor to the log: %v\n%s", err, logs.String())
	}

	file := filepath.Join(t.TempDir(), "anchor.jsonl")
	anchorer := newAuditAnchorer(b, file, logger, prometheus.NewRegistry())
	anchorer.now = func() time.Time { return time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC) }
	if err := anchorer.runOnce(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := readAnchorSummary(file)
	if err != nil || s.Requests != 1 || !s.At.Equal(anchorer.now()) || testutil.ToFloat64(anchorer.at) != float64(anchorer.now().Unix()) {
		t.Fatalf("the anchor file: %+v, %v", s, err)
	}
	if !strings.Contains(logs.String(), `"file":"`+file+`"`) {
		t.Errorf("the log does not name the file:\n%s", logs.String())
	}

	if err := b.Exec(`DROP TRIGGER events_no_update`); err != nil {
		t.Fatal(err)
	}
	if err := b.Exec(fmt.Sprintf(`UPDATE events SET actor = 'U0CEO' WHERE request_id = '%s' AND seq = 2`, req.ID)); err != nil {
		t.Fatal(err)
	}
	anchorer.now = func() time.Time { return time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) }
	logs.Reset()
	if err := anchorer.runOnce(ctx); err != nil || !strings.Contains(logs.String(), "the audit trail does not verify: no anchor taken") {
		t.Fatalf("anchoring an edited trail: %v\n%s", err, logs.String())
	}
	if s, err := readAnchorSummary(file); err != nil || !s.At.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) ||
		testutil.ToFloat64(anchorer.at) != float64(s.At.Unix()) {
		t.Errorf("after a trail that does not verify, the anchor is %+v, %v; want the one before", s, err)
	}
}

// retention.anchor_schedule is a cron schedule, anchor_file needs it, and
// serve schedules the anchor (on the leader) only where the file's
// directory is there.
func TestAuditAnchorConfiguration(t *testing.T) {
	t.Parallel()
	r := config.RetentionConfig{Schedule: "@every 10m", AnchorSchedule: "@daily", AnchorFile: "/var/lib/countersign/anchor.jsonl"}
	if err := r.Validate(); err != nil {
		t.Errorf("a daily anchor to a file: %v", err)
	}
	r.AnchorSchedule = "now and then"
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "retention.anchor_schedule") {
		t.Errorf("an anchor_schedule that is no schedule: %v", err)
	}
	r.AnchorSchedule = ""
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "retention.anchor_file is set without retention.anchor_schedule") {
		t.Errorf("an anchor_file without a schedule: %v", err)
	}

	cfg := &config.Config{}
	cfg.File.Retention = config.RetentionConfig{AnchorSchedule: "@daily", AnchorFile: filepath.Join(t.TempDir(), "anchor.jsonl")}
	if a := testApp(t, cfg, nil); !a.hasSweep("audit anchor") {
		t.Errorf("serve does not schedule the anchor: %v", a.sched.names)
	}
}
