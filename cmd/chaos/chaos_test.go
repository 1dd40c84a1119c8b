package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
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

// The PostgreSQL restart runs only when asked for, on a cluster found on
// the database's port, by root or the cluster's owner; otherwise it says
// why it is skipped.
func TestRestartPlan(t *testing.T) {
	clusters := func() (string, error) {
		return "16  main 5432 online postgres /var/lib/postgresql/16/main /var/log/postgresql/postgresql-16-main.log\n", nil
	}
	t.Setenv("COUNTERSIGN_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
	for _, c := range []struct {
		name, user string
		enabled    bool
		clusters   func() (string, error)
		argv, why  string
	}{
		{name: "not asked for", user: "root", clusters: clusters, why: "not asked for"},
		{name: "root", user: "root", enabled: true, clusters: clusters, argv: "pg_ctlcluster 16 main restart"},
		{name: "the owner", user: "postgres", enabled: true, clusters: clusters, argv: "pg_ctlcluster 16 main restart"},
		{name: "another user", user: "dev", enabled: true, clusters: clusters, why: "user dev may not restart cluster 16/main"},
		{name: "no pg_lsclusters", user: "root", enabled: true, clusters: func() (string, error) { return "", errors.New("not found") }, why: "pg_lsclusters is not available"},
		{name: "no cluster on the port", user: "root", enabled: true, clusters: func() (string, error) { return "16 main 5433 online postgres /d /l\n", nil }, why: "no local cluster listens on port 5432"},
	} {
		t.Run(c.name, func(t *testing.T) {
			argv, why := restartPlan(c.enabled, c.user, c.clusters)
			if got := strings.Join(argv, " "); got != c.argv {
				t.Errorf("command %q, want %q", got, c.argv)
			}
			if !strings.Contains(why, c.why) || (c.why == "" && why != "") {
				t.Errorf("reason %q, want one containing %q", why, c.why)
			}
		})
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
