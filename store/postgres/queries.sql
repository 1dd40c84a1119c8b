-- The PostgreSQL driver's statements, by name (see internal/namedsql). $N are
-- the Go call's arguments in order; a nil time is the database clock
-- (coalesce($N, now())).

-- name: card_columns
request_id::text AS request_id, round, surface, ref, rendered_state, settled, posted_at

-- name: claim_cte
-- Picks and claims the due rows ($1 now, $2 limit, $3 tools, $4 worker, $5
-- their claim timeouts in microseconds) as r, with each one's decision round.
WITH due AS (
	SELECT id FROM executions
	WHERE state = 'ready' AND next_attempt_at <= coalesce($1::timestamptz, now()) AND tool = ANY($3::text[])
	ORDER BY next_attempt_at
	LIMIT $2
	FOR UPDATE SKIP LOCKED
), c AS (
	-- ANY(ARRAY(…)) and the scalar subqueries keep every lookup on a primary
	-- key: a join here makes the planner scan the whole table per claim.
	UPDATE executions e SET state = 'claimed', claimed_by = $4, attempts = e.attempts + 1,
		claim_expires_at = coalesce($1::timestamptz, now()) + (
			SELECT t.us FROM unnest($3::text[], $5::bigint[]) AS t(name, us) WHERE t.name = e.tool
		) * interval '1 microsecond',
		updated_at = coalesce($1::timestamptz, now())
	WHERE e.id = ANY(ARRAY(SELECT id FROM due)) AND e.state = 'ready'
	RETURNING e.*
), r AS (
	-- The request's policy version is read by its primary key, one lookup
	-- per claimed row: the executor re-checks the policy only when it moved.
	SELECT c.*, (SELECT d.round FROM decisions d WHERE d.id = c.decision_id) AS decision_round,
		coalesce((SELECT q.policy->>'version' FROM requests q WHERE q.id = c.request_id), '') AS policy_version
	FROM c
)

-- name: claim_select
SELECT {{execution_columns}}, decision_round AS round, policy_version, coalesce($1::timestamptz, now()) AS db_now FROM r

-- name: decision_columns
id, request_id::text AS request_id, round, verdict, decided_by, via, payload_hash_seen, decided_at, reason

-- name: execution_columns
id, request_id::text AS request_id, decision_id, key, tool, snapshot, snapshot_hash, state,
	attempts, max_attempts, next_attempt_at, claimed_by, claim_expires_at, last_code, last_error,
	response_status, response_body, provider_ref, approved_at, created_at, updated_at, verify_first

-- name: request_columns
id::text AS id, key, basis_hash, run_id, step, tool, snapshot, payload_hash,
	summary, reason, requested_by, requested_for, status, round, expires_at,
	coalesce(card_surface, '') AS card_surface, coalesce(card_ref, '') AS card_ref, created_at, updated_at, version, policy,
	coalesce(round_started_at, created_at) AS round_started_at,
	coalesce(supersedes, '') AS supersedes, coalesce(superseded_by, '') AS superseded_by

-- name: insert_execution
-- A request created before a restore's guard_until may have been sent
-- before it: its execution verifies first (00021).
INSERT INTO executions (request_id, decision_id, key, tool, snapshot, snapshot_hash, max_attempts, approved_at, next_attempt_at, created_at, updated_at,
	requested_by, request_created_at, verify_first)
SELECT id, $2, key, tool, snapshot, payload_hash, $3, $4, $4, $4, $4, requested_by, created_at,
	EXISTS (SELECT 1 FROM restores WHERE restores.guard_until > requests.created_at)
FROM requests WHERE id = $1;

-- name: latest_execution
SELECT {{execution_columns}} FROM executions WHERE request_id = $1 ORDER BY id DESC LIMIT 1;

-- name: executions_for
SELECT {{execution_columns}} FROM executions WHERE request_id = $1 ORDER BY id;

-- name: latest_executions_of_requests
SELECT DISTINCT ON (executions.request_id) {{execution_columns}} FROM executions
WHERE request_id = ANY($1::uuid[]) ORDER BY executions.request_id, id DESC;

-- name: execution_for_decision
SELECT {{execution_columns}} FROM executions WHERE decision_id = $1 ORDER BY id DESC LIMIT 1;

-- name: execution_exists
SELECT EXISTS (SELECT 1 FROM executions WHERE id = $1 AND request_id = $2);

-- name: claim_execution_rows
{{claim_cte}}{{claim_select}};

-- name: claim_executions_batch
-- What each claim owes, as the Ledger built it (store.Owed): events ($6
-- actor, $7 kind, $8 data, merged with the claim's facts, store.ClaimFacts)
-- and outbox rows ($9 kind, $10 data, $13 coalesces) for every row
-- claimed; $11 wakes the waiters on each claimed request (channel $12).
{{claim_cte}}, ev AS (
	INSERT INTO events (request_id, actor, kind, data)
	SELECT r.request_id, x.actor, x.kind, x.data::jsonb || to_jsonb(f)
	FROM r CROSS JOIN unnest($6::text[], $7::text[], $8::text[]) AS x(actor, kind, data)
	CROSS JOIN LATERAL (SELECT r.attempts AS attempt, r.id AS execution_id, r.claim_expires_at) AS f
), ob AS (
	INSERT INTO outbox (kind, request_id, round, data, next_attempt_at, created_at)
	SELECT x.kind, r.request_id, r.decision_round, x.data::jsonb, r.updated_at, r.updated_at
	FROM r CROSS JOIN unnest($9::text[], $10::text[], $13::boolean[]) AS x(kind, data, coalesces)
	WHERE NOT (x.coalesces AND EXISTS (SELECT 1 FROM outbox w WHERE w.request_id = r.request_id
		AND w.round = r.decision_round AND w.kind = x.kind AND w.surface = '' AND {{outbox_waiting}}))
)
SELECT {{execution_columns}}, decision_round AS round, policy_version, coalesce($1::timestamptz, now()) AS db_now
FROM r LEFT JOIN LATERAL (SELECT pg_notify($12, r.request_id::text) WHERE $11::boolean) n ON true;

-- name: transition_execution_row
UPDATE executions e SET
	state = $3,
	claimed_by = CASE WHEN $3 = 'claimed' THEN e.claimed_by END,
	claim_expires_at = CASE WHEN $3 = 'claimed' THEN e.claim_expires_at END,
	next_attempt_at = coalesce($10::timestamptz, now()) + $9::bigint * interval '1 microsecond',
	response_status = coalesce(nullif($4::int, 0), e.response_status),
	response_body = coalesce($5::bytea, e.response_body),
	provider_ref = coalesce(nullif($6, ''), e.provider_ref),
	last_code = nullif($7, ''),
	last_error = nullif($8, ''),
	updated_at = coalesce($10::timestamptz, now())
FROM decisions d
WHERE e.id = $1 AND e.state = $11 AND e.attempts = $2 AND ($12 = '' OR e.claimed_by = $12) AND d.id = e.decision_id
RETURNING e.id, e.request_id::text, d.round, e.updated_at;

-- name: transition_executions_batch
-- $1-$11 are the transitions, $10 and $11 whether each one's move wakes its
-- request's waiters (channel $26) and the dispatcher (channel $27). What
-- each move owes comes as the Ledger built it (store.Owed), joined to the
-- move by the transition's position (ord): events ($15-$18), outbox rows
-- ($19-$21, $28) and callbacks ($22-$23, for the agents in $24 only,
-- retried for $25 microseconds).
WITH i AS (
	SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::int[], $5::bytea[], $6::text[],
		$7::text[], $8::text[], $9::bigint[], $10::boolean[], $11::boolean[]) WITH ORDINALITY
		AS i(id, attempt, state, status, body, ref, code, err, delay_us, wake_change, wake_ready, ord)
), u AS (
	UPDATE executions e SET
		state = i.state,
		claimed_by = CASE WHEN i.state = 'claimed' THEN e.claimed_by END,
		claim_expires_at = CASE WHEN i.state = 'claimed' THEN e.claim_expires_at END,
		next_attempt_at = coalesce($12::timestamptz, now()) + i.delay_us * interval '1 microsecond',
		response_status = coalesce(nullif(i.status, 0), e.response_status),
		response_body = coalesce(i.body, e.response_body),
		provider_ref = coalesce(nullif(i.ref, ''), e.provider_ref),
		last_code = nullif(i.code, ''),
		last_error = nullif(i.err, ''),
		updated_at = coalesce($12::timestamptz, now())
	FROM i
	WHERE e.id = i.id AND e.state = $13 AND e.attempts = i.attempt
		AND ($14 = '' OR e.claimed_by = $14)
	RETURNING e.id, e.request_id, e.decision_id, e.updated_at, i.ord, i.wake_change, i.wake_ready
), r AS (
	SELECT u.*, (SELECT d.round FROM decisions d WHERE d.id = u.decision_id) AS round FROM u
), ev AS (
	INSERT INTO events (request_id, actor, kind, data)
	SELECT r.request_id, x.actor, x.kind, x.data::jsonb
	FROM unnest($15::bigint[], $16::text[], $17::text[], $18::text[]) AS x(ord, actor, kind, data)
	JOIN r ON r.ord = x.ord
), ob AS (
	INSERT INTO outbox (kind, request_id, round, data, next_attempt_at, created_at)
	SELECT x.kind, r.request_id, r.round, x.data::jsonb, r.updated_at, r.updated_at
	FROM unnest($19::bigint[], $20::text[], $21::text[], $28::boolean[]) AS x(ord, kind, data, coalesces)
	JOIN r ON r.ord = x.ord
	WHERE NOT (x.coalesces AND EXISTS (SELECT 1 FROM outbox w WHERE w.request_id = r.request_id
		AND w.round = r.round AND w.kind = x.kind AND w.surface = '' AND {{outbox_waiting}}))
), cb AS (
	INSERT INTO callbacks (request_id, agent, event, next_attempt_at, give_up_at, created_at)
	SELECT r.request_id, q.requested_by, x.event,
		r.updated_at, r.updated_at + $25::bigint * interval '1 microsecond', r.updated_at
	FROM unnest($22::bigint[], $23::text[]) AS x(ord, event)
	JOIN r ON r.ord = x.ord
	JOIN requests q ON q.id = r.request_id
	WHERE q.requested_by = ANY($24::text[])
)
SELECT r.id AS execution_id, r.request_id::text AS request_id, r.round FROM r
LEFT JOIN LATERAL (SELECT pg_notify($26, r.request_id::text) WHERE r.wake_change) nc ON true
LEFT JOIN LATERAL (SELECT pg_notify($27, '') WHERE r.wake_ready) nr ON true;

-- name: supersede_execution
UPDATE executions e SET state = 'superseded', claimed_by = NULL, claim_expires_at = NULL,
	last_code = $4, last_error = $5, updated_at = coalesce($6::timestamptz, now())
FROM decisions d
WHERE e.id = $1 AND e.state = 'claimed' AND e.attempts = $2 AND e.claimed_by = $3 AND d.id = e.decision_id
RETURNING e.request_id::text, d.round, e.snapshot_hash, e.updated_at;

-- name: resolve_execution
UPDATE executions e SET state = $3,
	last_code = coalesce(nullif($4, ''), e.last_code),
	max_attempts = CASE WHEN $6::int > 0 THEN greatest(e.max_attempts, e.attempts + $6::int) ELSE e.max_attempts END,
	verify_first = e.verify_first AND NOT $7::boolean,
	next_attempt_at = coalesce($5::timestamptz, now()),
	updated_at = coalesce($5::timestamptz, now())
FROM decisions d
WHERE e.id = $1 AND e.request_id = $2 AND e.state = 'needs_review' AND d.id = e.decision_id
RETURNING e.attempts, d.round, e.updated_at;

-- name: expire_claim_rows
WITH due AS (
	SELECT id, claimed_by FROM executions
	WHERE state = 'claimed' AND claim_expires_at <= coalesce($1::timestamptz, now())
	ORDER BY claim_expires_at
	LIMIT $2
	FOR UPDATE SKIP LOCKED
), u AS (
	UPDATE executions e SET state = 'unknown', claimed_by = NULL, claim_expires_at = NULL,
		next_attempt_at = coalesce($1::timestamptz, now()),
		last_code = $3, last_error = $4,
		updated_at = coalesce($1::timestamptz, now())
	FROM due WHERE e.id = due.id AND e.state = 'claimed'
	RETURNING e.id, e.request_id, e.decision_id, e.attempts, e.updated_at, due.claimed_by AS held_by
)
SELECT u.id AS execution_id, u.request_id::text AS request_id, d.round, u.attempts, u.held_by, u.updated_at AS at
FROM u JOIN decisions d ON d.id = u.decision_id ORDER BY u.id;

-- name: lease_unknowns
WITH due AS (
	SELECT id FROM executions
	WHERE state = 'unknown' AND next_attempt_at <= coalesce($1::timestamptz, now())
	ORDER BY next_attempt_at
	LIMIT $3
	FOR UPDATE SKIP LOCKED
), u AS (
	UPDATE executions e SET next_attempt_at = coalesce($1::timestamptz, now()) + $2::bigint * interval '1 microsecond'
	FROM due WHERE e.id = due.id AND e.state = 'unknown'
	RETURNING e.*
)
SELECT {{execution_columns}}, coalesce($1::timestamptz, now()) AS db_now FROM u;

-- name: count_unsettled
SELECT
	(SELECT count(*) FROM executions WHERE state = 'unknown'),
	(SELECT count(*) FROM executions WHERE state = 'needs_review');

-- name: unresolved_request_ids
SELECT id::text FROM (
	(SELECT request_id AS id, updated_at FROM executions WHERE state = 'unknown' ORDER BY next_attempt_at LIMIT $1)
	UNION ALL
	(SELECT request_id, updated_at FROM executions WHERE state = 'needs_review' ORDER BY updated_at LIMIT $1)
) u ORDER BY updated_at LIMIT $1;

-- name: insert_decision
INSERT INTO decisions (request_id, round, verdict, decided_by, via, payload_hash_seen, decided_at, reason)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING {{decision_columns}};

-- name: lock_open_request
-- The request pending in round $2 with payload hash $3 and unexpired, its row
-- locked until the vote's transaction ends: voters on one request take turns,
-- so the count each sees includes every vote committed before it.
SELECT {{request_columns}} FROM requests
WHERE id = $1 AND round = $2 AND payload_hash = $3 AND status = 'pending'
	AND expires_at > coalesce($4::timestamptz, now())
FOR UPDATE;

-- name: vote_columns
id, request_id::text AS request_id, round, voter, verdict, reason, via, payload_hash_seen, voted_at

-- name: insert_vote
INSERT INTO votes (request_id, round, voter, verdict, reason, via, payload_hash_seen, voted_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, coalesce($8::timestamptz, now()))
ON CONFLICT (request_id, round, voter) DO NOTHING
RETURNING {{vote_columns}};

-- name: votes_for
SELECT {{vote_columns}} FROM votes WHERE request_id = $1 AND round = $2 ORDER BY id;

-- name: decision_for
SELECT {{decision_columns}} FROM decisions WHERE request_id = $1 AND round = $2;

-- name: latest_decision
SELECT {{decision_columns}} FROM decisions WHERE request_id = $1 ORDER BY round DESC LIMIT 1;

-- name: votes_of_requests
-- The votes of several requests, every round (the caller keeps each one's
-- current round's): a request has a handful.
SELECT {{vote_columns}} FROM votes WHERE request_id = ANY($1::uuid[]) ORDER BY id;

-- name: latest_decisions_of_requests
SELECT DISTINCT ON (decisions.request_id) {{decision_columns}} FROM decisions
WHERE request_id = ANY($1::uuid[]) ORDER BY decisions.request_id, round DESC;

-- name: insert_events
-- at is left to the database: the chain trigger sets it, and a row routed
-- to another month's partition by a given at could not move there.
INSERT INTO events (request_id, actor, kind, data)
SELECT request_id::uuid, actor, kind, data::jsonb
FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[]) AS t(request_id, at, actor, kind, data);

-- name: events_for
-- In chain order, from the chain's index (the events' ids are taken before
-- the chain's lock, so two written at once may number the other way).
SELECT id, request_id::text AS request_id, at, actor, kind, data
FROM events WHERE request_id = $1 ORDER BY seq;

-- name: insert_outbox
-- A row that coalesces ($6) is not queued while one like it (for the same
-- surface) waits unclaimed.
INSERT INTO outbox (kind, request_id, round, data, next_attempt_at, created_at, surface, destination)
SELECT t.kind, t.request_id::uuid, t.round, t.data::jsonb, coalesce(t.at, now()), coalesce(t.at, now()), t.surface, t.destination
FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::timestamptz[], $6::boolean[], $7::text[], $8::text[])
	AS t(kind, request_id, round, data, at, coalesces, surface, destination)
WHERE NOT (t.coalesces AND EXISTS (SELECT 1 FROM outbox w WHERE w.request_id = t.request_id::uuid AND w.round = t.round
	AND w.kind = t.kind AND w.surface = t.surface AND {{outbox_waiting}}));

-- name: outbox_waiting
-- A row that waits for its first claim, locked until the transaction ends
-- so that no delivery claims it in between (store.NewOutbox.Coalesce).
w.state = 'pending' AND w.attempts = 0 FOR SHARE

-- name: claim_outbox
WITH due AS (
	SELECT id FROM outbox
	WHERE state = 'pending' AND next_attempt_at <= now()
	ORDER BY next_attempt_at, id
	LIMIT $1
	FOR UPDATE SKIP LOCKED
)
UPDATE outbox o SET next_attempt_at = now() + $2::bigint * interval '1 microsecond', attempts = o.attempts + 1
FROM due WHERE o.id = due.id
RETURNING o.id, o.kind, o.request_id::text AS request_id, o.round, o.surface, o.destination, o.data, o.attempts,
	coalesce(o.last_error, '') AS last_error, o.created_at;

-- name: renew_outbox
UPDATE outbox SET next_attempt_at = greatest(next_attempt_at, now() + $2::bigint * interval '1 microsecond')
WHERE id = ANY($1) AND state = 'pending';

-- name: mark_outbox_delivered
UPDATE outbox SET state = 'delivered', delivered_at = now(),
	last_error = nullif($2, '') WHERE id = $1 AND state = 'pending';

-- name: mark_outbox_failed
UPDATE outbox SET state = 'failed', last_error = $2
	WHERE id = $1 AND state = 'pending';

-- name: retry_outbox
UPDATE outbox SET next_attempt_at = now() + $2::bigint * interval '1 microsecond',
	attempts = greatest(attempts + $3, 0),
	last_error = CASE WHEN $3 < 0 THEN last_error ELSE nullif($4, '') END WHERE id = $1 AND state = 'pending';

-- name: post_pending
SELECT EXISTS (SELECT 1 FROM outbox
	WHERE request_id = $1 AND round = $2 AND kind = $3 AND state = 'pending');

-- name: other_post_rows
SELECT EXISTS (SELECT 1 FROM outbox
	WHERE request_id = $1 AND round = $2 AND kind = $4 AND id <> $3 AND surface IN ($5, ''));

-- name: card_for
SELECT {{card_columns}} FROM cards WHERE request_id = $1 AND round = $2 AND surface = $3;

-- name: record_card
-- The request points at the round's first card: another surface's card of
-- the same round leaves it.
WITH ins AS (
	INSERT INTO cards (request_id, round, surface, ref, rendered_state, settled)
	VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (request_id, round, surface) DO NOTHING
	RETURNING request_id, round, surface, ref, rendered_state, settled, posted_at
), req AS (
	UPDATE requests r SET card_surface = ins.surface, card_ref = ins.ref
	FROM ins WHERE r.id = ins.request_id AND r.round = ins.round
		AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.request_id = r.id AND c.round = r.round
			AND c.surface = r.card_surface AND c.surface <> ins.surface AND c.ref = r.card_ref)
)
SELECT {{card_columns}} FROM ins
UNION ALL
SELECT request_id::text, round, surface, ref, rendered_state, settled, posted_at FROM cards
WHERE request_id = $1 AND round = $2 AND surface = $3 AND NOT EXISTS (SELECT 1 FROM ins);

-- name: mark_card_rendered
UPDATE cards SET rendered_state = $3, settled = $4, rendered_at = now()
WHERE request_id = $1 AND round = $2 AND surface = $5;

-- name: card_state
-- countersign_card_state (migrations/postgres/00003_bot.sql) is
-- store.CardStateOf; the contract suite holds the two together.
SELECT countersign_card_state($1, $2);

-- name: enqueue_stale_cards
-- $2 is how long a failed delivery keeps the sweep from queueing the same
-- card again and $3 how long a pending round may go without a card (both in
-- microseconds), $4 and $5 the kinds of an update and a post, $6 their data
-- (store.StaleCardsParams). An update is for the stale card's surface.
WITH stale AS (
	SELECT c.request_id, c.round, c.surface FROM cards c
	WHERE NOT c.settled
		AND c.rendered_state IS DISTINCT FROM countersign_card_state(c.request_id, c.round)
		AND NOT EXISTS (SELECT 1 FROM outbox o
			WHERE o.request_id = c.request_id AND o.round = c.round AND o.kind = $4 AND o.surface IN (c.surface, '')
				AND (o.state = 'pending' OR (o.state = 'failed' AND o.created_at > now() - $2::bigint * interval '1 microsecond')))
	ORDER BY c.rendered_at
	LIMIT $1
), unposted AS (
	SELECT r.id AS request_id, r.round FROM requests r
	WHERE r.status = 'pending' AND r.updated_at < now() - $3::bigint * interval '1 microsecond'
		AND r.expires_at > now()
		AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.request_id = r.id AND c.round = r.round)
		AND NOT EXISTS (SELECT 1 FROM outbox o
			WHERE o.request_id = r.id AND o.round = r.round AND o.kind = $5
				AND (o.state = 'pending' OR (o.state = 'failed' AND o.created_at > now() - $2::bigint * interval '1 microsecond')))
	ORDER BY r.expires_at
	LIMIT $1
)
INSERT INTO outbox (kind, request_id, round, data, surface)
SELECT $4, request_id, round, $6::jsonb, surface FROM stale
UNION ALL
SELECT $5, request_id, round, $6::jsonb, '' FROM unposted;

-- name: requests_by_key_prefix
SELECT {{request_columns}} FROM requests
WHERE key >= $1 AND key < $2 ORDER BY key LIMIT $3;

-- name: requests_by_effect_string
-- The matches come from the GIN index, never from walking requests_newest
-- until enough match: the statistics know only the values most requests
-- share (a currency), so an id, in one request or a hundred, is estimated
-- in 0.5 % of the table, and on 10,000,000 requests that walk read the
-- whole table for an old invoice (17 to 44 s). Past 1,000 matches (a value
-- most requests share) the newest are those among the first 1,000 read.
WITH matched AS MATERIALIZED (
	SELECT id, created_at FROM requests WHERE effect_strings @> ARRAY[$1::text] LIMIT 1000
)
SELECT {{request_columns}} FROM requests
WHERE id IN (SELECT id FROM matched ORDER BY created_at DESC LIMIT $2)
ORDER BY created_at DESC;

-- name: pending_requests
SELECT {{request_columns}} FROM requests
WHERE status = 'pending' ORDER BY expires_at LIMIT $1;

-- name: recently_decided
SELECT {{request_columns}} FROM requests
WHERE status <> 'pending' ORDER BY updated_at DESC LIMIT $1;

-- name: list_page
-- The rest of a branch of list_requests, on requests: $1 the agent ('' every
-- agent's), $2 status, $3 tool, $4 run id ('' any), after the position $6,
-- $7 (null: from the newest), newest first, $8 rows at most.
($1 = '' OR requests.requested_by = $1)
	AND ($2 = '' OR requests.status = $2)
	AND ($3 = '' OR requests.tool = $3)
	AND ($4 = '' OR requests.run_id = $4)
	AND ($6::timestamptz IS NULL OR (requests.created_at, requests.id) < ($6::timestamptz, $7::uuid))
ORDER BY requests.created_at DESC, requests.id DESC
LIMIT $8

-- name: list_requests
-- A page of requests in listing order: list_page names the arguments but
-- $5, settled (null either). It is planned for its arguments every time
-- (see ListRequests), so a filter left empty folds away, and so does every
-- branch but those settled asks for; each branch reads its page in order
-- from the index its filters pick (migration 00010), and the page is the
-- newest of what they read. settled is store.Settled of the status and the
-- latest execution, by its rule ($9, $10, $11: store.SettledRule). The requests that can be unsettled are the pending ones
-- and the approved ones whose execution is live, which is then their latest
-- (an approval creates its execution in its own transaction, and a
-- supersede that retires one reopens the request in the same one): settled
-- = false reads those two branches, never the agent's settled history. The
-- second walks the live executions in listing order, by their request's
-- agent, created_at and id, which each execution carries (migration 00020:
-- an agent's index, and everyone's for admins). Joined to their requests
-- on id and created_at, that order is the branch's ORDER BY, so it stops
-- after a page. The agent and the position are repeated on the execution's
-- columns, where the index searches them; the other filters are checked on
-- the request.
SELECT {{request_columns}} FROM (
	(SELECT requests.* FROM requests WHERE $5::boolean IS NOT false
		AND ($5::boolean IS NULL OR requests.status = ANY($9::text[])
			OR (requests.status = $10 AND coalesce((SELECT e.state = ANY($11::text[]) FROM executions e
				WHERE e.request_id = requests.id ORDER BY e.id DESC LIMIT 1), false)))
		AND {{list_page}})
	UNION ALL
	(SELECT requests.* FROM requests WHERE $5::boolean IS false AND requests.status = 'pending' AND {{list_page}})
	UNION ALL
	(SELECT requests.* FROM executions live
		JOIN requests ON requests.id = live.request_id AND requests.created_at = live.request_created_at
	WHERE $5::boolean IS false AND live.state NOT IN ('succeeded', 'failed', 'superseded')
		AND ($1 = '' OR live.requested_by = $1)
		AND ($6::timestamptz IS NULL OR (live.request_created_at, live.request_id) < ($6::timestamptz, $7::uuid))
		AND requests.status = 'approved' AND {{list_page}})
) page
ORDER BY page.created_at DESC, page.id DESC
LIMIT $8;

-- name: insert_request
-- A pruned key (one with a tombstone) is not inserted again.
INSERT INTO requests (key, basis_hash, run_id, step, tool, effect_strings, snapshot, payload_hash,
	summary, reason, requested_by, requested_for, expires_at, created_at, updated_at, policy, supersedes)
SELECT $1, $2, $3, $4::jsonb, $5, $6, $7, $8, $9, $10, $11, $12,
	coalesce($14::timestamptz, now()) + $13::bigint * interval '1 microsecond', coalesce($14::timestamptz, now()), coalesce($14::timestamptz, now()),
	$15::jsonb, nullif($16::text, '')
WHERE NOT EXISTS (SELECT 1 FROM tombstones t WHERE t.key = $1)
ON CONFLICT (key) DO NOTHING
RETURNING {{request_columns}};

-- name: request_by_key
SELECT {{request_columns}} FROM requests WHERE key = $1;

-- name: request_by_id
SELECT {{request_columns}} FROM requests WHERE id = $1;

-- name: replay_request
SELECT {{request_columns}}, EXISTS (SELECT 1 FROM outbox o
		WHERE o.request_id = requests.id AND o.round = requests.round AND o.kind = $2 AND o.state = 'pending') AS post_queued
FROM requests WHERE key = $1;

-- name: replay_requests_many
SELECT {{request_columns}}, EXISTS (SELECT 1 FROM outbox o
		WHERE o.request_id = requests.id AND o.round = requests.round AND o.kind = $2 AND o.state = 'pending') AS post_queued
FROM requests WHERE key = ANY($1);

-- name: decide_request
UPDATE requests SET status = $4, updated_at = coalesce($5::timestamptz, now()), version = version + 1
WHERE id = $1 AND round = $2 AND payload_hash = $3 AND status = 'pending'
	AND expires_at > coalesce($5::timestamptz, now())
RETURNING {{request_columns}};

-- name: mark_edited
UPDATE requests SET status = 'edited', superseded_by = $4, updated_at = coalesce($5::timestamptz, now()), version = version + 1
WHERE id = $1 AND round = $2 AND payload_hash = $3 AND status = 'pending'
	AND expires_at > coalesce($5::timestamptz, now())
RETURNING {{request_columns}};

-- name: cancel_request
UPDATE requests SET status = 'cancelled', updated_at = coalesce($2::timestamptz, now()), version = version + 1
WHERE id = $1 AND status = 'pending'
RETURNING {{request_columns}};

-- name: expire_requests
WITH due AS (
	SELECT id FROM requests
	WHERE status = 'pending' AND expires_at <= coalesce($1::timestamptz, now())
	ORDER BY expires_at
	LIMIT $2
	FOR UPDATE SKIP LOCKED
), r AS (
	UPDATE requests SET status = 'expired', updated_at = coalesce($1::timestamptz, now()), version = version + 1
	FROM due WHERE requests.id = due.id AND requests.status = 'pending'
	RETURNING requests.*
)
SELECT {{request_columns}} FROM r;

-- name: reopen_request
-- $5, when not null, is the new round's policy.
UPDATE requests SET status = 'pending', round = round + 1, updated_at = $3::timestamptz, round_started_at = $3::timestamptz,
	version = version + 1,
	expires_at = greatest(expires_at, $3::timestamptz + $4::bigint * interval '1 microsecond'),
	policy = coalesce($5::jsonb, policy)
WHERE id = $1 AND status = 'approved' AND round = $2
RETURNING round;

-- name: set_card
UPDATE requests SET card_surface = $2, card_ref = $3 WHERE id = $1;

-- name: redrive_card
INSERT INTO outbox (kind, request_id, round)
SELECT $2::text, r.id, r.round FROM requests r
WHERE r.id = $1 AND r.status = 'pending' AND r.card_ref IS NULL
	AND NOT EXISTS (SELECT 1 FROM outbox o
		WHERE o.request_id = r.id AND o.round = r.round AND o.kind = $2 AND o.state = 'pending');

-- name: insert_requests
-- What each inserted request owes comes as the Ledger built it (store.Owed),
-- joined to the row by its key: events ($16 key, $17 actor, $18 kind, $19
-- data) and outbox rows ($20 key, $21 kind, $22 data), each taking the
-- request's id, round and creation time. A key given twice in one batch
-- comes with what it owes once.
WITH input AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[],
		$7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::bigint[], $13::text[], $15::text[])
		AS t(key, basis_hash, run_id, step, tool, snapshot, payload_hash, summary, reason, requested_by, requested_for, ttl_us, effect_strings, policy)
), r AS (
	INSERT INTO requests (key, basis_hash, run_id, step, tool, effect_strings, snapshot, payload_hash,
		summary, reason, requested_by, requested_for, expires_at, created_at, updated_at, policy)
	SELECT key, basis_hash, run_id, step::jsonb, tool, effect_strings::text[], snapshot, payload_hash,
		summary, reason, requested_by, requested_for,
		coalesce($14::timestamptz, now()) + ttl_us * interval '1 microsecond',
		coalesce($14::timestamptz, now()), coalesce($14::timestamptz, now()), policy::jsonb
	FROM input
	-- A pruned key is not inserted again. A scalar subquery, not NOT EXISTS:
	-- it stays one probe of the tombstones' key per row, where an anti join
	-- planned while the table was small (the prepared statement keeps its
	-- plan) reads every tombstone for each batch as the sweep adds them.
	WHERE (SELECT true FROM tombstones t WHERE t.key = input.key) IS NULL
	ORDER BY key -- batches take their key locks in one order, so two never deadlock
	ON CONFLICT (key) DO NOTHING
	RETURNING *
), e AS (
	INSERT INTO events (request_id, actor, kind, data)
	SELECT r.id, x.actor, x.kind, x.data::jsonb
	FROM unnest($16::text[], $17::text[], $18::text[], $19::text[]) WITH ORDINALITY AS x(key, actor, kind, data, n)
	JOIN r ON r.key = x.key
	ORDER BY x.n
), o AS (
	INSERT INTO outbox (kind, request_id, round, data, next_attempt_at, created_at)
	SELECT x.kind, r.id, r.round, x.data::jsonb, r.created_at, r.created_at
	FROM unnest($20::text[], $21::text[], $22::text[]) WITH ORDINALITY AS x(key, kind, data, n)
	JOIN r ON r.key = x.key
	ORDER BY x.n
)
SELECT {{request_columns}}, true AS inserted, false AS post_queued FROM r;

-- name: due_nudges
-- Pending requests of tool $1 whose round began $2 microseconds before $3
-- (nil: now), with their round's card posted, that have no nudge of kind
-- $4 queued for that round; longest waiting first.
SELECT {{request_columns}} FROM requests r
WHERE r.status = 'pending' AND r.tool = $1
	AND coalesce(r.round_started_at, r.created_at) <= coalesce($3::timestamptz, now()) - $2::bigint * interval '1 microsecond'
	AND r.expires_at > coalesce($3::timestamptz, now())
	-- Scalar subqueries, not EXISTS and NOT EXISTS: they stay one probe of
	-- cards' key and of outbox_nudge_once per pending request, where a
	-- misjudged join scans one table for each row of the other.
	AND (SELECT c.ref FROM cards c WHERE c.request_id = r.id AND c.round = r.round LIMIT 1) IS NOT NULL
	AND (SELECT o.id FROM outbox o
		WHERE o.request_id = r.id AND o.round = r.round AND o.data ? 'nudge' AND o.data ->> 'nudge' = $4
		LIMIT 1) IS NULL
ORDER BY coalesce(r.round_started_at, r.created_at)
LIMIT $5;

-- name: queue_nudge
-- FOR SHARE waits for a decision in flight, so a request decided meanwhile
-- is not nudged; the unique index outbox_nudge_once keeps one per round.
INSERT INTO outbox (kind, request_id, round, data)
SELECT $4::text, id, round, $3::jsonb FROM requests
WHERE id = $1 AND round = $2 AND status = 'pending'
FOR SHARE
ON CONFLICT DO NOTHING
RETURNING created_at;

-- name: nudge_queued
SELECT EXISTS (SELECT 1 FROM outbox
	WHERE request_id = $1 AND round = $2 AND data ? 'nudge' AND data ->> 'nudge' = $3);

-- name: pending_by_tool
SELECT tool, count(*)::int AS count, min(coalesce(round_started_at, created_at)) AS oldest, now() AS now
FROM requests WHERE status = 'pending' GROUP BY tool ORDER BY tool;

-- name: callback_columns
id, delivery_id::text AS delivery_id, request_id::text AS request_id, agent, event, state, attempts,
	next_attempt_at, give_up_at, last_status, coalesce(last_error, '') AS last_error, created_at

-- name: insert_callbacks
INSERT INTO callbacks (request_id, agent, event, next_attempt_at, give_up_at, created_at)
SELECT request_id::uuid, agent, event, coalesce(at, now()), coalesce(at, now()) + $5::bigint * interval '1 microsecond', coalesce(at, now())
FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS t(request_id, agent, event, at);

-- name: claim_callbacks
WITH due AS (
	SELECT id FROM callbacks
	WHERE state = 'pending' AND next_attempt_at <= now()
	ORDER BY next_attempt_at, id
	LIMIT $1
	FOR UPDATE SKIP LOCKED
)
UPDATE callbacks SET next_attempt_at = now() + $2::bigint * interval '1 microsecond', attempts = callbacks.attempts + 1
WHERE callbacks.id = ANY(ARRAY(SELECT id FROM due))
RETURNING {{callback_columns}};

-- name: renew_callback
-- $2, the claim's lease, identifies the attempt.
UPDATE callbacks SET next_attempt_at = now() + $3::bigint * interval '1 microsecond'
WHERE id = $1 AND state = 'pending' AND next_attempt_at = $2
RETURNING next_attempt_at;

-- name: mark_callback_delivered
-- $3, the claim's lease, identifies the attempt (see Ledger.MarkCallbackDelivered).
UPDATE callbacks SET state = 'delivered', delivered_at = now(), last_status = $2, last_error = NULL
WHERE id = $1 AND state = 'pending' AND next_attempt_at = $3;

-- name: retry_callback
-- A failed attempt past the retry window fails the row; otherwise it waits
-- for its next attempt.
UPDATE callbacks SET last_status = nullif($3::int, 0), last_error = nullif($4, ''),
	state = CASE WHEN now() >= give_up_at THEN 'failed' ELSE 'pending' END,
	next_attempt_at = now() + $2::bigint * interval '1 microsecond'
WHERE id = $1 AND state = 'pending' AND next_attempt_at = $5
RETURNING state;

-- name: latest_callback
SELECT {{callback_columns}} FROM callbacks WHERE request_id = $1 ORDER BY id DESC LIMIT 1;

-- name: latest_callbacks_of_requests
SELECT DISTINCT ON (callbacks.request_id) {{callback_columns}} FROM callbacks
WHERE request_id = ANY($1::uuid[]) ORDER BY callbacks.request_id, id DESC;

-- name: redrive_callback
-- Attempts start again from 0, and with them the backoff.
UPDATE callbacks SET state = 'pending', next_attempt_at = now(), attempts = 0,
	give_up_at = now() + $2::bigint * interval '1 microsecond', delivered_at = NULL
WHERE id = (SELECT max(id) FROM callbacks WHERE request_id = $1)
RETURNING {{callback_columns}};

-- name: count_callback_backlog
SELECT count(*) FROM callbacks WHERE state = 'pending';

-- name: count_outbox_backlog
SELECT count(*) FROM outbox WHERE state = 'pending';

-- name: ready_by_tool
SELECT tool, count(*)::int AS count FROM executions WHERE state = 'ready' GROUP BY tool ORDER BY tool;

-- name: notify
-- Wakes the waiters on each request in $2 (channel $1) and, when $4, the
-- dispatcher (channel $3), once the transaction commits.
SELECT count(pg_notify($1, id)) FROM unnest($2::text[]) AS t(id)
UNION ALL
SELECT count(pg_notify($3, '')) WHERE $4::boolean;

-- name: tombstones
SELECT key, basis_hash, agent, status, settled_at, pruned_at FROM tombstones WHERE key = ANY($1);

-- name: settled_requests
-- Up to $2 requests settled before $1: in a final status ($3), or approved
-- ($4) with their newest execution in a final state ($5); none with a
-- callback still pending. The status <> 'pending' and updated_at bounds are
-- requests_recently_decided's, which finds the candidates (an execution
-- settles after its approval, so its request changed before it).
SELECT r.id::text AS request_id, r.key, r.basis_hash, r.requested_by AS agent,
	coalesce(x.state, r.status) AS status, greatest(r.updated_at, x.updated_at) AS settled_at,
	now() AS pruned_at
FROM requests r
LEFT JOIN LATERAL (SELECT e.state, e.updated_at FROM executions e
	WHERE e.request_id = r.id ORDER BY e.id DESC LIMIT 1) x ON r.status = $4
WHERE r.status <> 'pending' AND r.updated_at < $1
	AND (r.status = ANY($3::text[]) OR (r.status = $4 AND x.state = ANY($5::text[]) AND x.updated_at < $1))
	AND NOT EXISTS (SELECT 1 FROM callbacks c WHERE c.request_id = r.id AND c.state = 'pending')
ORDER BY r.updated_at
LIMIT $2
FOR UPDATE OF r SKIP LOCKED;

-- name: insert_tombstones
INSERT INTO tombstones (key, basis_hash, agent, status, settled_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
ON CONFLICT (key) DO NOTHING;

-- name: delete_requests
-- Every row that references the requests goes in the same statement, before
-- the foreign keys are checked at its end; events keep theirs (no key).
WITH ids AS (SELECT unnest($1::uuid[]) AS id),
callbacks_gone AS (DELETE FROM callbacks WHERE request_id IN (SELECT id FROM ids)),
outbox_gone AS (DELETE FROM outbox WHERE request_id IN (SELECT id FROM ids)),
cards_gone AS (DELETE FROM cards WHERE request_id IN (SELECT id FROM ids)),
votes_gone AS (DELETE FROM votes WHERE request_id IN (SELECT id FROM ids)),
executions_gone AS (DELETE FROM executions WHERE request_id IN (SELECT id FROM ids)),
decisions_gone AS (DELETE FROM decisions WHERE request_id IN (SELECT id FROM ids)),
heads_gone AS (DELETE FROM chain_heads WHERE request_id IN (SELECT id FROM ids))
DELETE FROM requests WHERE id IN (SELECT id FROM ids);

-- name: audit_chain
-- Events after ($1, $2) in the chains' order, data as the text they were
-- hashed with.
SELECT id, request_id::text, seq, at, actor, kind, data::text, prev_hash, hash FROM events
WHERE (request_id, seq) > ($1::uuid, $2) ORDER BY request_id, seq LIMIT $3;

-- name: audit_checkpoints
SELECT id, partition, range_from, range_to, events, digest, dropped_by, dropped_at, prev_hash, hash
FROM audit_checkpoints ORDER BY id;

-- name: checkpoint_heads
SELECT request_id::text, seq, hash FROM audit_checkpoint_heads
WHERE checkpoint_id = $1 AND request_id > $2::uuid ORDER BY request_id LIMIT $3;

-- name: last_checkpoint_head
SELECT request_id::text, seq, hash FROM audit_checkpoint_heads
WHERE request_id = $1 ORDER BY seq DESC LIMIT 1;

-- name: checkpoint_head_from
SELECT request_id::text, seq, hash FROM audit_checkpoint_heads
WHERE request_id = $1 AND seq >= $2 ORDER BY seq LIMIT 1;

-- name: take_post_slot
-- Returns the microseconds from now until the slot taken.
INSERT INTO surface_pacing AS p (surface, destination, next_post_at) VALUES ($1, $3, now() + $2::bigint * interval '1 microsecond')
ON CONFLICT (surface, destination) DO UPDATE SET next_post_at =
	greatest(p.next_post_at, now(), coalesce(p.paused_until, now())) + $2::bigint * interval '1 microsecond'
RETURNING (extract(epoch FROM (p.next_post_at - now())) * 1000000)::bigint - $2::bigint;

-- name: pause_lane
INSERT INTO surface_pacing AS p (surface, destination, paused_until) VALUES ($1, $3, now() + $2::bigint * interval '1 microsecond')
ON CONFLICT (surface, destination) DO UPDATE SET paused_until = greatest(p.paused_until, excluded.paused_until);

-- name: lane_pause
SELECT coalesce((SELECT greatest((extract(epoch FROM (paused_until - now())) * 1000000)::bigint, 0)
	FROM surface_pacing WHERE surface = $1 AND destination = $2), 0);

-- name: mark_restored
WITH f AS (
	UPDATE executions SET verify_first = true
	WHERE state NOT IN ('succeeded', 'failed', 'superseded')
	RETURNING 1
)
INSERT INTO restores (restored_at, guard_until, source, flagged)
SELECT coalesce($1::timestamptz, now()), coalesce($1::timestamptz, now()) + $2::bigint * interval '1 microsecond',
	$3, (SELECT count(*) FROM f)
RETURNING id, restored_at, guard_until, flagged;

-- name: grant_columns
id, tool, agent, grantor, request_id::text AS request_id, round, match, amount_field, amount_ceiling,
	created_at, expires_at, revoked_at, revoked_by

-- name: insert_grant
INSERT INTO grants (id, tool, agent, grantor, request_id, round, match, amount_field, amount_ceiling, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11);

-- name: grant_by_id
SELECT {{grant_columns}} FROM grants WHERE id = $1;

-- name: live_grants
SELECT {{grant_columns}} FROM grants
WHERE tool = $1 AND agent = $2 AND revoked_at IS NULL AND expires_at > $3
ORDER BY created_at, id;

-- name: list_grants
SELECT {{grant_columns}} FROM grants
WHERE ($1::text = '' OR grantor = $1::text)
	AND ($2::timestamptz IS NULL OR (revoked_at IS NULL AND expires_at > $2::timestamptz))
ORDER BY created_at DESC, id DESC LIMIT $3;

-- name: revoke_grant
-- One statement decides: a grant that ended, or is another grantor's,
-- does not move.
UPDATE grants SET revoked_at = coalesce($3::timestamptz, now()), revoked_by = $2
WHERE id = $1 AND revoked_at IS NULL AND expires_at > coalesce($3::timestamptz, now())
	AND ($4::text = '' OR grantor = $4::text)
RETURNING {{grant_columns}};

-- name: hold_grant
-- A revocation's UPDATE waits for this lock, so it lands after the approval
-- the grant is making, or before it and is seen.
SELECT true FROM grants
WHERE id = $1 AND revoked_at IS NULL AND expires_at > coalesce($2::timestamptz, now())
FOR SHARE;

-- name: count_surface_attempt
INSERT INTO surface_attempts AS a (surface, key, attempts, expires_at) VALUES ($1, $2, 1, $3)
ON CONFLICT (surface, key) DO UPDATE SET attempts = a.attempts + 1, expires_at = greatest(a.expires_at, excluded.expires_at)
RETURNING attempts;

-- name: delete_expired_surface_attempts
DELETE FROM surface_attempts WHERE expires_at < now();

-- name: surface_attempts
SELECT coalesce((SELECT attempts FROM surface_attempts WHERE surface = $1 AND key = $2), 0);

-- name: requests_by_tool_effect_string
-- The matches come from the GIN index on effect_strings, as in
-- requests_by_effect_string, bounded the same way.
WITH matched AS MATERIALIZED (
	SELECT id FROM requests WHERE effect_strings @> ARRAY[$1::text] LIMIT 1000
)
SELECT {{request_columns}} FROM requests
WHERE id IN (SELECT id FROM matched) AND tool = $2 AND created_at < $3
ORDER BY created_at DESC LIMIT $4;

-- name: preview_columns
request_id::text AS request_id, state, coalesce(changes, '[]'::jsonb) AS changes, summary, reason,
	started_at, finished_at

-- name: preview_for
SELECT {{preview_columns}} FROM previews WHERE request_id = $1;

-- name: claim_preview
INSERT INTO previews (request_id, state, started_at)
VALUES ($1, $2, coalesce($3::timestamptz, now()))
ON CONFLICT (request_id) DO UPDATE SET started_at = excluded.started_at
	WHERE previews.state = excluded.state AND previews.started_at < $4
RETURNING true;

-- name: record_preview
UPDATE previews SET state = $2, changes = $3::jsonb, summary = $4, reason = $5,
	finished_at = coalesce($6::timestamptz, now())
WHERE request_id = $1 AND state = $7
RETURNING true;
