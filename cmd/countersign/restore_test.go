package main

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store/storetest"
)

// countRows counts the rows of table in the embedded store at path.
func countRows(t *testing.T, path, table string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatalf("counting %s: %v", table, err)
	}
	return n
}

// restore refuses while serve runs on the data directory, and once serve
// has stopped puts the copy in place (0600), keeps the store it replaced,
// and marks the copy restored; serve then starts on it.
func TestRestoreRefusesWhileServingThenRestores(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := envFrom(map[string]string{"COUNTERSIGN_DATA_DIR": dir, "COUNTERSIGN_LISTEN": "127.0.0.1:0", "COUNTERSIGN_LOG_FORMAT": "json"})
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"serve"}, env, nil, io.Discard, logs) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), "listening") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start: %s", logs.String())
		}
		select {
		case code := <-exited:
			t.Fatalf("serve exited %d: %s", code, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	copyPath := filepath.Join(t.TempDir(), "backup.db")
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"backup", copyPath}, env, nil, &out, &errOut); code != 0 {
		cancel()
		t.Fatalf("backup exited %d: %s", code, errOut.String())
	}
	errOut.Reset()
	code := run(context.Background(), []string{"restore", copyPath}, env, nil, io.Discard, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "stop it first") {
		t.Errorf("restore while serve runs exited %d: %s; want a refusal", code, errOut.String())
	}
	cancel()
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}

	// A symlink to the copy is refused: restore reads the copy itself.
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(copyPath, link); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"restore", link}, env, nil, io.Discard, &errOut); code != 1 || !strings.Contains(errOut.String(), "symlink") {
		t.Errorf("restore of a symlink exited %d: %s", code, errOut.String())
	}

	out.Reset()
	errOut.Reset()
	if code := run(context.Background(), []string{"restore", "--replay-window", "2h", copyPath}, env, nil, &out, &errOut); code != 0 {
		t.Fatalf("restore exited %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "verify with their provider before a send") || !strings.Contains(out.String(), "before-restore-") {
		t.Errorf("restore said: %s", out.String())
	}
	path := filepath.Join(dir, storeFile)
	if info, err := os.Lstat(path); err != nil || info.Mode().Perm() != 0o600 || !info.Mode().IsRegular() {
		t.Errorf("the restored store: %v %v, want a regular file 0600", info, err)
	}
	kept, _ := filepath.Glob(path + ".before-restore-*")
	if len(kept) == 0 {
		t.Error("the store the copy replaced was not kept")
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Lstat(path + suffix); err == nil {
			t.Errorf("%s%s was left beside the copy: SQLite would replay it into the copy", storeFile, suffix)
		}
	}
	if n := countRows(t, path, "restores"); n != 1 {
		t.Errorf("restores recorded: %d, want 1", n)
	}
	base, _ := startServeWith(t, env)
	if base == "" {
		t.Fatal("serve did not start on the restored store")
	}
}

// restore --postgres marks the database; a FILE with it, or PostgreSQL
// without --postgres, is refused.
func TestRestorePostgresMarksTheDatabase(t *testing.T) {
	t.Parallel()
	url := storetest.NewURL(t)
	env := envFrom(map[string]string{"COUNTERSIGN_DATABASE_URL": url})
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"restore", "x.db"}, env, nil, io.Discard, &errOut); code != 1 || !strings.Contains(errOut.String(), "restore --postgres") {
		t.Errorf("restore FILE with PostgreSQL exited %d: %s", code, errOut.String())
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"restore", "--postgres", "x.db"}, env, nil, io.Discard, &errOut); code != 2 {
		t.Errorf("restore --postgres FILE exited %d: %s", code, errOut.String())
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"restore", "--postgres"}, env, nil, &out, &errOut); code != 0 {
		t.Fatalf("restore --postgres exited %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "marked the PostgreSQL database restored") {
		t.Errorf("restore --postgres said: %s", out.String())
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM restores WHERE source = 'postgres'").Scan(&n); err != nil || n != 1 {
		t.Errorf("restores recorded: %d %v, want 1", n, err)
	}
}
