package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store/storetest"
)

// TestShortChaos is the short chaos run: three replicas, a handful of kills
// -9, no PostgreSQL restart, and every figure as it must be.
func TestShortChaos(t *testing.T) {
	opts := shortRun
	began := time.Now()
	opts.Log = func(format string, args ...any) {
		t.Logf("%5.1fs "+format, append([]any{time.Since(began).Seconds()}, args...)...)
	}
	figs, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("figures after %s:\n%s", time.Since(began).Round(time.Second), figs.Table())
	if !figs.OK() {
		t.Fatal("a figure is not what it must be (see the table above)")
	}
}

// Without PostgreSQL's server binaries, -restart-postgres says how to get
// them; with them, it finds the newest.
func TestPGBinDir(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := pgBinDir(filepath.Join(t.TempDir(), "*", "bin")); !errors.Is(err, errNoServerBinaries) ||
		!strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Fatalf("no binaries: %v, want the install hint", err)
	}
	root := t.TempDir()
	for _, v := range []string{"9", "16", "15"} {
		bin := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"initdb", "pg_ctl"} {
			if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if dir, err := pgBinDir(filepath.Join(root, "*", "bin")); err != nil || dir != filepath.Join(root, "16", "bin") {
		t.Fatalf("found %q, %v; want version 16's", dir, err)
	}
}

// The restart fault restarts a cluster the run created, on its own port,
// and never the server other work uses.
func TestOwnPostgresRestarts(t *testing.T) {
	ctx := context.Background()
	shared, err := startedAt(ctx, storetest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	s := &scope{}
	defer s.close()
	c, err := startOwnCluster(ctx, s, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.URL(), ":5432/") {
		t.Fatalf("the run's cluster is on the shared port: %s", c.URL())
	}
	before, err := startedAt(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.restart(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := startedAt(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	if !after.After(before) {
		t.Errorf("the run's cluster started at %s before the restart and %s after", before, after)
	}
	if again, err := startedAt(ctx, storetest.AdminURL()); err != nil || !again.Equal(shared) {
		t.Errorf("the shared server started at %s, now %s (%v): it was restarted", shared, again, err)
	}
	dir := c.dir
	s.close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the cluster's directory %s is left behind (%v)", dir, err)
	}
}

// The table fails the run when one figure is off, and never passes an
// empty run.
func TestFiguresOK(t *testing.T) {
	var f Figures
	if f.OK() {
		t.Fatal("no figures passed")
	}
	f.check("duplicate cards", 0, 0)
	if !f.OK() {
		t.Fatal("a figure as it must be failed")
	}
	f.check("duplicate replies", 1, 0)
	if f.OK() || !strings.Contains(f.Table(), "FAIL") {
		t.Fatalf("a figure off passed:\n%s", f.Table())
	}
}

// A replica that fails to start is started again, as a supervisor would,
// rather than ending the run (or the simulated day).
func TestReplicaRestartRetries(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "serve")
	// Fails the first time, serves the second.
	body := "#!/bin/sh\nif [ ! -e \"$MARK\" ]; then touch \"$MARK\"; echo 'database not ready' >&2; exit 1; fi\n" +
		"echo '{\"msg\":\"listening\",\"addr\":\"127.0.0.1:9\"}' >&2\nexec sleep 60\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	rep := &replica{name: "replica-1", binary: script, env: []string{"MARK=" + filepath.Join(dir, "tried")}}
	defer rep.stop()
	var failures []string
	err := rep.restart(context.Background(), func(format string, args ...any) { failures = append(failures, format) })
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	if rep.url() != "http://127.0.0.1:9" || len(failures) != 1 {
		t.Fatalf("serving at %q after %d failures; want 127.0.0.1:9 after 1", rep.url(), len(failures))
	}
}
