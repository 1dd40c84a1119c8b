package storetest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store/postgres"
)

// SizeVariable names the environment variable that sets how many requests
// a benchmark seeds (SeedSize), so a benchmark of 1,000,000 can be run small.
const SizeVariable = "COUNTERSIGN_BENCH_REQUESTS"

// SeedSize is how many requests a benchmark seeds: the count SizeVariable
// names, else short under -short, else full.
func SeedSize(tb testing.TB, full, short int) int {
	tb.Helper()
	if v := os.Getenv(SizeVariable); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			tb.Fatalf("%s=%q is not a count of requests", SizeVariable, v)
		}
		return n
	}
	if testing.Short() {
		return short
	}
	return full
}

// Seed describes the requests SeedLedger writes. Agents and tools cycle
// over 50 each (billing-agent is one agent in 50, billing.credit and
// deploy.release two tools in 50); 70 % of the requests are approved, with
// a decision and an execution (4 % failed, the rest succeeded), and 10 %
// each rejected (with a decision), expired and cancelled, less the pending
// ones. Request i is created i seconds after the first and the last two
// hours before now, so a window shorter than that has all settled ones
// settled before it. Each effect names an invoice of its own (inv_<i>) and
// one of 100,000 customers (cus_<i mod 100,000>), as intake stores them:
// an invoice matches one request, a customer one in 100,000.
type Seed struct {
	Requests int
	// Live keeps some work open, as a ledger in service has it: 5 % of the
	// newest liveWindow requests pending (taken from the approved), 0.3 %
	// of their executions ready or in needs_review. Without it every
	// request is settled. Open work follows the rate and the time to
	// decide, not the length of the history, so a larger seed keeps the
	// same open work and settles the rest.
	Live bool
	// Trail adds what else hangs on each request: its vote, its card,
	// the card's outbox rows (the post, the last update, the execution's
	// thread reply), the settled callback of the agents that take
	// callbacks (billing-agent and agent-1 to agent-9), and its audit
	// events, chained as the database chains them.
	Trail bool
}

// liveWindow is how many of the newest requests Seed.Live keeps open work
// among.
const liveWindow = 1_000_000

// callbackAgents are the agents whose settled requests Seed.Trail gives a
// delivered callback.
var callbackAgents = "'billing-agent', 'agent-1', 'agent-2', 'agent-3', 'agent-4', 'agent-5', 'agent-6', 'agent-7', 'agent-8', 'agent-9'"

// SeedLedger fills db's ledger, which must be empty, with s.Requests
// requests set-based, one INSERT … SELECT per table, as intake, review,
// the executor and Slack would have left them. Every index of requests,
// decisions and executions but the latter two's primary keys (which grow
// in order) is built after the rows it indexes are in: sorted once rather
// than updated row by row at random, whose pages, evicted and written
// back, dominated a seeding of 10,000,000. The foreign keys on requests
// are dropped with its primary key and added again while the tables that
// hold them are still empty. Every table is vacuumed and analyzed at the
// end: the GIN index's pending list is empty, as autovacuum leaves it in
// service. The statements run as a replica session
// (session_replication_role), which skips the triggers: the foreign keys
// hold by construction, the version bumps would only rewrite every
// request, and the audit chain is computed here with the database's own
// hash function.
func SeedLedger(tb testing.TB, db *postgres.Driver, s Seed) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	keysDrop, keysAdd, err := requestKeys(ctx, db)
	if err != nil {
		tb.Fatalf("the keys on requests: %v", err)
	}
	drops, builds, err := deferredIndexes(ctx, db)
	if err != nil {
		tb.Fatalf("the indexes to build after the insert: %v", err)
	}
	start := time.Now()
	inserts := ledgerStatements(s)
	statements := append(append(keysDrop, drops...), inserts[0])
	statements = append(append(statements, keysAdd...), inserts[1:]...)
	statements = append(statements, builds...)
	for _, table := range []string{"requests", "decisions", "executions", "votes", "cards", "outbox", "callbacks", "events"} {
		statements = append(statements, "VACUUM ANALYZE "+table)
	}
	for _, sql := range statements {
		t0 := time.Now()
		if err := seedStatement(ctx, db, sql); err != nil {
			tb.Fatalf("seeding: %v\n%s", err, sql)
		}
		tb.Logf("%6s  %.90s", time.Since(t0).Round(100*time.Millisecond), strings.Join(strings.Fields(sql), " "))
	}
	tb.Logf("seeded %d requests in %s", s.Requests, time.Since(start).Round(time.Second))
}

// requestKeys returns the statements that drop the foreign keys on
// requests and its primary key, and those that add them again.
func requestKeys(ctx context.Context, db *postgres.Driver) (drops, adds []string, err error) {
	rows, err := db.Pool.Query(ctx, `SELECT 'ALTER TABLE ' || c.conrelid::regclass || ' DROP CONSTRAINT ' || quote_ident(c.conname),
	'ALTER TABLE ' || c.conrelid::regclass || ' ADD CONSTRAINT ' || quote_ident(c.conname) || ' ' || pg_get_constraintdef(c.oid)
FROM pg_constraint c
WHERE c.confrelid = 'requests'::regclass AND c.contype = 'f' OR c.conrelid = 'requests'::regclass AND c.contype = 'p'
ORDER BY c.contype = 'p', c.conname`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var drop, add string
		if err := rows.Scan(&drop, &add); err != nil {
			return nil, nil, err
		}
		drops = append(drops, drop)
		adds = append([]string{add}, adds...) // the primary key before the foreign keys on it
	}
	if rows.Err() != nil {
		return nil, nil, rows.Err()
	}
	if len(drops) < 2 {
		return nil, nil, fmt.Errorf("found %v", drops)
	}
	return drops, adds, nil
}

// deferredIndexes returns the statements that drop the indexes of
// requests, decisions and executions other than their primary keys (and
// the unique constraints they back), and those that build them again. An
// index a foreign key relies on stays.
func deferredIndexes(ctx context.Context, db *postgres.Driver) (drops, builds []string, err error) {
	rows, err := db.Pool.Query(ctx, `SELECT CASE WHEN c.oid IS NULL THEN 'DROP INDEX ' || quote_ident(i.relname)
		ELSE 'ALTER TABLE ' || t.relname || ' DROP CONSTRAINT ' || quote_ident(c.conname) END,
	CASE WHEN c.oid IS NULL THEN pg_get_indexdef(x.indexrelid)
		ELSE 'ALTER TABLE ' || t.relname || ' ADD CONSTRAINT ' || quote_ident(c.conname) || ' ' || pg_get_constraintdef(c.oid) END
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
	LEFT JOIN pg_constraint c ON c.conindid = x.indexrelid AND c.contype = 'u'
WHERE t.relname IN ('requests', 'decisions', 'executions') AND t.relnamespace = 'public'::regnamespace AND NOT x.indisprimary
	AND NOT EXISTS (SELECT 1 FROM pg_constraint f WHERE f.contype = 'f' AND f.conindid = x.indexrelid)
ORDER BY t.relname, i.relname`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var drop, build string
		if err := rows.Scan(&drop, &build); err != nil {
			return nil, nil, err
		}
		drops, builds = append(drops, drop), append(builds, build)
	}
	if rows.Err() != nil {
		return nil, nil, rows.Err()
	}
	if len(drops) < 15 {
		return nil, nil, fmt.Errorf("found %d indexes: %v", len(drops), drops)
	}
	return drops, builds, nil
}

// ledgerStatements are the inserts that write s, in order.
func ledgerStatements(s Seed) []string {
	pending, inFlight := 0, 0
	if s.Live {
		pending, inFlight = 5, 3
	}
	statements := []string{
		// h decides the status; agent and tool cycle independently. A
		// request settles (its updated_at) 30 s after it was created when
		// decided, 10 s when cancelled, at its expiry when expired. The
		// effect's strings are written out as countersign_effect_strings(e)
		// finds them, which costs 17 µs a row more.
		fmt.Sprintf(`INSERT INTO requests (key, basis_hash, run_id, step, tool, effect_strings, snapshot, payload_hash, summary,
	requested_by, status, expires_at, created_at, updated_at, round_started_at, card_surface, card_ref)
SELECT 'wa_' || encode(sha256(convert_to('list' || i, 'UTF8')), 'hex'), 'sha256:' || md5(i::text),
	'run-' || (i %% 50) || '-' || (i / 500), to_jsonb(i %% 10),
	CASE (i / 50) %% 50 WHEN 0 THEN 'billing.credit' WHEN 1 THEN 'deploy.release' ELSE 'tool-' || (i / 50) %% 50 END,
	ARRAY['USD', 'cus_' || i %% 100000, 'inv_' || i], convert_to(e::text, 'UTF8'), 'sha256:' || md5(e::text), 'seeded',
	CASE i %% 50 WHEN 0 THEN 'billing-agent' ELSE 'agent-' || i %% 50 END,
	st, CASE st WHEN 'pending' THEN now() + interval '1 day' ELSE c + interval '1 hour' END, c,
	c + CASE st WHEN 'pending' THEN interval '0' WHEN 'cancelled' THEN interval '10 s' WHEN 'expired' THEN interval '1 hour' ELSE interval '30 s' END,
	c, CASE WHEN %[3]t THEN 'slack' END, CASE WHEN %[3]t THEN 'C0BENCH/' || to_char(c, 'YYYYMMDDHH24MISS') || '.' || i END
FROM generate_series(1, %[1]d) AS i,
	LATERAL (SELECT (hashint4(i) & 2147483647) %% 100, i > %[1]d - %[4]d) AS s(h, live),
	LATERAL (SELECT CASE WHEN live AND h < %[2]d THEN 'pending' WHEN h < %[2]d + 70 THEN 'approved' WHEN h < %[2]d + 80 THEN 'rejected'
		WHEN h < %[2]d + 90 THEN 'expired' ELSE 'cancelled' END) AS t(st),
	LATERAL (SELECT now() - interval '2 hours' - (%[1]d - i) * interval '1 second') AS w(c),
	LATERAL (SELECT jsonb_build_object('invoice', 'inv_' || i, 'customer', 'cus_' || i %% 100000, 'amount_cents', i,
		'currency', 'USD')) AS x(e)`,
			s.Requests, pending, s.Trail, liveWindow),
		`INSERT INTO decisions (request_id, round, verdict, decided_by, via, payload_hash_seen, decided_at)
SELECT id, 1, CASE status WHEN 'approved' THEN 'approve' ELSE 'reject' END, 'UANA', 'slack', payload_hash, updated_at
FROM requests WHERE status IN ('approved', 'rejected')`,
		// inFlight per mille of the approvals among the newest liveWindow
		// requests are still executing (ready, or waiting for a person in
		// needs_review), 4 % failed, the rest succeeded, 2 s after the
		// approval.
		fmt.Sprintf(`INSERT INTO executions (request_id, decision_id, key, tool, snapshot, snapshot_hash, state, attempts, max_attempts,
	approved_at, next_attempt_at, created_at, updated_at, response_status, response_body, last_code, provider_ref, requested_by, request_created_at)
SELECT d.request_id, d.id, r.key, r.tool, r.snapshot, r.payload_hash, x.state, 1, 3, d.decided_at, d.decided_at, d.decided_at,
	d.decided_at + CASE WHEN x.state IN ('succeeded', 'failed') THEN interval '2 s' ELSE interval '0' END,
	CASE x.state WHEN 'succeeded' THEN 200 WHEN 'failed' THEN 422 END,
	CASE x.state WHEN 'succeeded' THEN convert_to('{"id":"ch_' || d.id || '","status":"paid"}', 'UTF8') END,
	CASE x.state WHEN 'failed' THEN 'declined' END, CASE x.state WHEN 'succeeded' THEN 'ch_' || d.id END,
	r.requested_by, r.created_at
FROM decisions d JOIN requests r ON r.id = d.request_id,
	(SELECT max(created_at) - %[2]d * interval '1 second' FROM requests) AS n(live_since),
	LATERAL (SELECT (hashtext(r.key) & 2147483647) %% 1000, r.created_at > n.live_since) AS s(h, live),
	LATERAL (SELECT CASE WHEN live AND h < %[1]d THEN CASE WHEN h %% 3 < 2 THEN 'ready' ELSE 'needs_review' END
		WHEN h < %[1]d + 40 THEN 'failed' ELSE 'succeeded' END) AS x(state)
WHERE d.verdict = 'approve'`, inFlight, liveWindow),
	}
	if s.Trail {
		statements = append(statements, "ANALYZE requests, decisions, executions")
		statements = append(statements, trailStatements...)
	}
	return statements
}

// seedStatement runs one statement as a replica session, in a transaction
// of its own (VACUUM, which cannot run in one, runs alone).
func seedStatement(ctx context.Context, db *postgres.Driver, sql string) error {
	if strings.HasPrefix(sql, "VACUUM") {
		_, err := db.Pool.Exec(ctx, sql)
		return err
	}
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	// Index builds sort in memory rather than on disk; the setting lasts
	// the transaction.
	for _, set := range []string{"SET LOCAL session_replication_role = replica", "SET LOCAL maintenance_work_mem = '1GB'"} {
		if _, err := tx.Exec(ctx, set); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, sql); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// trailStatements write Seed.Trail's rows, after the requests, decisions
// and executions.
var trailStatements = []string{
	`INSERT INTO votes (request_id, round, voter, verdict, via, payload_hash_seen, voted_at)
SELECT request_id, round, decided_by, verdict, via, payload_hash_seen, decided_at FROM decisions`,
	`INSERT INTO cards (request_id, round, surface, ref, rendered_state, settled, posted_at, rendered_at)
SELECT r.id, 1, r.card_surface, r.card_ref,
	CASE r.status WHEN 'approved' THEN 'approved/' || e.state || '/' || e.attempts ELSE r.status END,
	r.status <> 'pending' AND coalesce(e.state IN ('succeeded', 'failed'), true), r.created_at, greatest(r.updated_at, e.updated_at)
FROM requests r LEFT JOIN executions e ON e.request_id = r.id`,
	`INSERT INTO outbox (kind, request_id, round, surface, state, attempts, next_attempt_at, created_at, delivered_at)
SELECT k.kind, r.id, 1, 'slack', 'delivered', 1, k.at, k.at, k.at + interval '200 ms'
FROM requests r LEFT JOIN executions e ON e.request_id = r.id,
	LATERAL (VALUES ('post_card', r.created_at, true), ('update_card', greatest(r.updated_at, e.updated_at), r.status <> 'pending'),
		('thread_reply', e.updated_at, e.state IN ('succeeded', 'failed'))) AS k(kind, at, owed)
WHERE k.owed`,
	`INSERT INTO callbacks (request_id, agent, event, state, attempts, next_attempt_at, give_up_at, created_at, delivered_at, last_status)
SELECT r.id, r.requested_by, 'request.settled', 'delivered', 1, s.at, s.at + interval '24 hours', s.at, s.at + interval '150 ms', 200
FROM requests r LEFT JOIN executions e ON e.request_id = r.id, LATERAL (SELECT greatest(r.updated_at, e.updated_at)) AS s(at)
WHERE r.status <> 'pending' AND coalesce(e.state IN ('succeeded', 'failed'), true) AND r.requested_by IN (` + callbackAgents + `)`,
	// Up to five events a request, in order: requested; voted and decided
	// (approved, rejected), or expired, or cancelled; claimed and the
	// execution's outcome. Each is chained to the one before it by
	// countersign_event_hash, the chain trigger's own function, so the
	// trail verifies; ids are eight apart per request. OFFSET 0 keeps
	// each hash a value of its own: inlined, every later hash would
	// compute the ones before it again (ten times slower).
	`INSERT INTO events (id, request_id, at, actor, kind, data, seq, prev_hash, hash)
SELECT n * 8 + v.seq, r.id, v.at, v.actor, v.kind, v.data, v.seq, v.prev, v.hash
FROM (SELECT r.*, row_number() OVER () AS n FROM requests r) r
	LEFT JOIN decisions d ON d.request_id = r.id
	LEFT JOIN executions e ON e.request_id = r.id,
	LATERAL (SELECT 'agent:' || r.requested_by AS agent, jsonb_build_object('round', 1) AS round) AS a,
	LATERAL (SELECT
		r.created_at AS at1, a.agent AS actor1, 'requested' AS kind1, jsonb_build_object('key', r.key, 'round', 1) AS data1,
		CASE WHEN d.id IS NOT NULL THEN d.decided_at WHEN r.status = 'expired' THEN r.expires_at ELSE r.updated_at END AS at2,
		CASE WHEN d.id IS NOT NULL THEN d.decided_by WHEN r.status = 'expired' THEN 'system' ELSE a.agent END AS actor2,
		CASE WHEN d.id IS NOT NULL THEN 'voted' WHEN r.status IN ('expired', 'cancelled') THEN r.status END AS kind2,
		CASE WHEN d.id IS NOT NULL THEN a.round || jsonb_build_object('verdict', d.verdict) ELSE a.round END AS data2,
		CASE WHEN d.id IS NOT NULL THEN 'decided' END AS kind3,
		CASE WHEN e.id IS NOT NULL THEN 'claimed' END AS kind4,
		jsonb_build_object('attempt', 1, 'execution_id', e.id) AS data4,
		CASE WHEN e.state IN ('succeeded', 'failed') THEN e.state END AS kind5,
		CASE e.state WHEN 'succeeded' THEN jsonb_build_object('attempt', 1, 'status', 200)
			ELSE jsonb_build_object('attempt', 1, 'code', 'declined') END AS data5) AS k,
	LATERAL (SELECT countersign_event_hash('', n * 8 + 1, r.id, 1, k.at1, k.actor1, k.kind1, k.data1) AS h1 OFFSET 0) AS h1,
	LATERAL (SELECT countersign_event_hash(h1.h1, n * 8 + 2, r.id, 2, k.at2, k.actor2, k.kind2, k.data2) AS h2 OFFSET 0) AS h2,
	LATERAL (SELECT countersign_event_hash(h2.h2, n * 8 + 3, r.id, 3, k.at2, k.actor2, k.kind3, k.data2) AS h3 OFFSET 0) AS h3,
	LATERAL (SELECT countersign_event_hash(h3.h3, n * 8 + 4, r.id, 4, e.approved_at + interval '1 s', 'executor:w1', k.kind4, k.data4) AS h4 OFFSET 0) AS h4,
	LATERAL (SELECT countersign_event_hash(h4.h4, n * 8 + 5, r.id, 5, e.updated_at, 'executor:w1', k.kind5, k.data5) AS h5 OFFSET 0) AS h5,
	LATERAL (VALUES
		(1, k.at1, k.actor1, k.kind1, k.data1, '', h1.h1),
		(2, k.at2, k.actor2, k.kind2, k.data2, h1.h1, h2.h2),
		(3, k.at2, k.actor2, k.kind3, k.data2, h2.h2, h3.h3),
		(4, e.approved_at + interval '1 s', 'executor:w1', k.kind4, k.data4, h3.h3, h4.h4),
		(5, e.updated_at, 'executor:w1', k.kind5, k.data5, h4.h4, h5.h5)) AS v(seq, at, actor, kind, data, prev, hash)
WHERE v.kind IS NOT NULL`,
	`SELECT setval('events_id_seq', (SELECT max(id) FROM events))`,
	// The chain's trigger keeps each request's head (00027) and was
	// skipped: each request's last event is its head. A schema from before
	// 00027 has no heads to keep.
	`DO $$ BEGIN
	IF to_regclass('chain_heads') IS NOT NULL THEN
		INSERT INTO chain_heads (request_id, seq, hash, prev_hash)
		SELECT DISTINCT ON (request_id) request_id, seq, hash, prev_hash FROM events ORDER BY request_id, seq DESC;
	END IF;
END $$`,
}
