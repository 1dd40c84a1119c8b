package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// backup copies the embedded store while serve takes intents, and the copy
// restores: a serve started on it answers every request stored before the
// backup began.
func TestBackupWhileServingRestores(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"COUNTERSIGN_DATA_DIR": dir, "COUNTERSIGN_LISTEN": "127.0.0.1:0", "COUNTERSIGN_LOG_FORMAT": "json"}
	base, _ := startServeWith(t, envFrom(env))
	token, err := os.ReadFile(filepath.Join(dir, localTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	post := func(base string, step int) (int, string) {
		body := fmt.Sprintf(`{"run_id":"backup-run","step":%d,"tool":"demo.refund","effect":{"order":"ord_%d","amount_cents":100,"currency":"EUR"}}`, step, step)
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/requests", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	const before = 20
	for i := range before {
		if code, body := post(base, i); code != http.StatusCreated {
			t.Fatalf("intent %d: %d %s", i, code, body)
		}
	}

	// Intake goes on during the copy.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := before; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if code, body := post(base, i); code != http.StatusCreated {
				t.Errorf("intent %d during the backup: %d %s", i, code, body)
				return
			}
		}
	}()
	copyPath := filepath.Join(t.TempDir(), "countersign-backup.db")
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"backup", copyPath}, envFrom(env), nil, &out, &errOut)
	close(stop)
	wg.Wait()
	if code != 0 || !strings.Contains(out.String(), "integrity checked") {
		t.Fatalf("backup exited %d: %s %s", code, out.String(), errOut.String())
	}
	if info, err := os.Stat(copyPath); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the copy's mode is %v (%v), want 0600: it holds every effect", info.Mode().Perm(), err)
	}
	// A second backup never overwrites the first.
	if code := run(context.Background(), []string{"backup", copyPath}, envFrom(env), nil, io.Discard, &errOut); code != 1 || !strings.Contains(errOut.String(), "the file exists") {
		t.Errorf("backup onto an existing file exited %d: %s", code, errOut.String())
	}

	restored := t.TempDir()
	raw, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(restored, storeFile), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(restored, localTokenFile), token, 0o600); err != nil {
		t.Fatal(err)
	}
	base2, _ := startServeWith(t, envFrom(map[string]string{"COUNTERSIGN_DATA_DIR": restored, "COUNTERSIGN_LISTEN": "127.0.0.1:0", "COUNTERSIGN_LOG_FORMAT": "json"}))
	for i := range before {
		// The same intent replays the stored request: it is in the copy.
		if code, body := post(base2, i); code != http.StatusOK {
			t.Errorf("intent %d after the restore: %d %s, want 200, the request replayed from the copy", i, code, body)
		}
	}
}

// For PostgreSQL, backup says which tools to use instead.
func TestBackupOfPostgreSQLPointsToItsTools(t *testing.T) {
	t.Parallel()
	var errOut bytes.Buffer
	code := run(context.Background(), []string{"backup", filepath.Join(t.TempDir(), "x.db")},
		envFrom(map[string]string{"COUNTERSIGN_DATABASE_URL": "postgres://u@127.0.0.1:5432/db"}), nil, io.Discard, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "pg_dump") || !strings.Contains(errOut.String(), "PITR") {
		t.Errorf("backup with PostgreSQL exited %d: %s", code, errOut.String())
	}
}
