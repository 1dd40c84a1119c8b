package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/bench/peers/internal/pgtest"
)

// TestSmoke burns down a few jobs and times a few singles, so a River
// upgrade that breaks the baseline fails the test run.
func TestSmoke(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-database-url", pgtest.NewURL(t), "-jobs", "50", "-trickle", "3", "-json"}, &out)
	if err != nil {
		t.Fatalf("riverexec: %v\n%s", err, out.String())
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("decoding %q: %v", out.String(), err)
	}
	if res.Jobs != 50 || res.Failed != 0 || res.Singles != 3 || res.JobsPerSec <= 0 {
		t.Errorf("result = %+v, want 50 jobs, none failed, 3 singles", res)
	}
}

// TestLedgerKeepsTheRecords runs the -ledger mode and counts what it kept:
// for every job, its request row moved to succeeded through two versions,
// and two audit events and two card updates (the claim and the outcome).
func TestLedgerKeepsTheRecords(t *testing.T) {
	url := pgtest.NewURL(t)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-database-url", url, "-jobs", "40", "-trickle", "3", "-json", "-ledger"}, &out); err != nil {
		t.Fatalf("riverexec -ledger: %v\n%s", err, out.String())
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("decoding %q: %v", out.String(), err)
	}
	if res.Mode != "river+ledger" || res.Jobs != 40 || res.Failed != 0 || res.Singles != 3 {
		t.Errorf("result = %+v, want river+ledger, 40 jobs, none failed, 3 singles", res)
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	const jobs = 43
	for query, want := range map[string]int{
		`SELECT count(*) FROM peer_requests WHERE status = 'succeeded' AND version = 3`: jobs,
		`SELECT count(*) FROM peer_events`:                                              2 * jobs,
		`SELECT count(*) FROM peer_outbox`:                                              2 * jobs,
	} {
		var n int
		if err := conn.QueryRow(context.Background(), query).Scan(&n); err != nil || n != want {
			t.Errorf("%s = %d, %v; want %d", query, n, err, want)
		}
	}
}
