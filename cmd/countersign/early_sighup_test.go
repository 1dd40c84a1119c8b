//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store/storetest"
)

// A SIGHUP that reaches serve while it is still starting (here: waiting for
// the migration lock another replica holds) is handled once serve runs, not
// fatal: Go ends a program on SIGHUP unless it is caught, and serve caught
// it only once it listened.
func TestSIGHUPWhileStartingDoesNotEndServe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := storetest.NewURL(t)
	holder, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	const migrationLock = 0x636f756e746572 // store/postgres's migrationLockID
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLock)); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envServeProcess+"=1", "COUNTERSIGN_DRAIN_DELAY=0",
		"COUNTERSIGN_CONFIG="+writeConfig(t, reloadConfig([]string{"early-token"}, 1, "")),
		"COUNTERSIGN_DATABASE_URL="+dbURL, "COUNTERSIGN_DATA_DIR="+t.TempDir(), "COUNTERSIGN_LISTEN=127.0.0.1:0",
		"COUNTERSIGN_LOG_FORMAT=json", "COUNTERSIGN_INBOX=off", "COUNTERSIGN_DISPATCH_SECRET=s", "SLACK_BOT_TOKEN=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	logs := &syncBuffer{}
	listening := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stderr)
		for scanner.Scan() {
			_, _ = logs.Write(append(append([]byte(nil), scanner.Bytes()...), '\n'))
			if addr, ok := listeningAddr(scanner.Bytes()); ok {
				listening <- addr
			}
		}
	}()

	// serve connects to the database only after it reads its
	// configuration, and is then held at the migration lock.
	for deadline := time.Now().Add(60 * time.Second); ; {
		var others int
		if err := holder.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&others); err != nil {
			t.Fatal(err)
		}
		if others > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never connected to its database:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond) // polling the server's view of serve
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// The kernel has delivered the signal once it is no longer pending.
	for deadline := time.Now().Add(10 * time.Second); sighupPending(t, cmd.Process.Pid); {
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP still pending after 10 s")
		}
		time.Sleep(5 * time.Millisecond) // polling /proc
	}
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_unlock($1)", int64(migrationLock)); err != nil {
		t.Fatal(err)
	}

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-listening:
	case err := <-exited:
		t.Fatalf("serve ended on a SIGHUP while starting (%v):\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("serve never listened:\n%s", logs.String())
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), `"msg":"configuration reloaded"`); {
		if time.Now().After(deadline) {
			t.Fatalf("the early SIGHUP was never handled:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond) // polling serve's log
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Errorf("serve exited with %v after SIGTERM:\n%s", err, logs.String())
	}
}

// sighupPending tells whether SIGHUP is pending for the process, to the
// thread group or to any one thread.
func sighupPending(t *testing.T, pid int) bool {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false // gone: nothing is pending
	}
	for _, line := range strings.Split(string(status), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "SigPnd" && name != "ShdPnd") {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(value), 16, 64)
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		if mask&(1<<(syscall.SIGHUP-1)) != 0 {
			return true
		}
	}
	return false
}
