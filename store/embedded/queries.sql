-- The SQLite driver's statements, by name (see internal/namedsql). Times are
-- unix microseconds; ?N are the Go call's arguments in order.

-- name: card_columns
request_id, round, surface, ref, rendered_state, settled, posted_at

-- name: decision_columns
id, request_id, round, verdict, decided_by, via, payload_hash_seen, decided_at, reason

-- name: decision_round
(SELECT d.round FROM decisions d WHERE d.id = decision_id)

-- name: execution_columns
id, request_id, decision_id, key, tool, snapshot, snapshot_hash, state,
	attempts, max_attempts, next_attempt_at, claimed_by, claim_expires_at, last_code, last_error,
	response_status, response_body, provider_ref, approved_at, created_at, updated_at, verify_first

-- name: request_columns
id, key, basis_hash, run_id, step, tool, snapshot, payload_hash,
	summary, reason, requested_by, requested_for, status, round, expires_at,
	coalesce(card_surface, ''), coalesce(card_ref, ''), created_at, updated_at, version, policy,
	coalesce(round_started_at, created_at), coalesce(supersedes, ''), coalesce(superseded_by, '')

-- name: insert_execution
-- A request created before a restore's guard_until may have been sent
-- before it: its execution verifies first (00021).
INSERT INTO executions (request_id, decision_id, key, tool, snapshot, snapshot_hash, max_attempts,
	approved_at, next_attempt_at, created_at, updated_at, verify_first)
SELECT id, ?2, key, tool, snapshot, payload_hash, ?3, ?4, ?4, ?4, ?4,
	EXISTS (SELECT 1 FROM restores WHERE restores.guard_until > requests.created_at)
FROM requests WHERE id = ?1;

-- name: latest_execution
SELECT {{execution_columns}} FROM executions WHERE request_id = ? ORDER BY id DESC LIMIT 1;

-- name: executions_for
SELECT {{execution_columns}} FROM executions WHERE request_id = ? ORDER BY id;

-- name: execution_for_decision
SELECT {{execution_columns}} FROM executions WHERE decision_id = ? ORDER BY id DESC LIMIT 1;

-- name: execution_exists
SELECT EXISTS (SELECT 1 FROM executions WHERE id = ? AND request_id = ?);

-- name: claim_executions
-- ?3 maps each tool to claim to its claim timeout in microseconds.
UPDATE executions SET state = 'claimed', claimed_by = ?1, attempts = attempts + 1, updated_at = ?2,
	claim_expires_at = ?2 + (SELECT t.value FROM json_each(?3) t WHERE t.key = executions.tool)
WHERE id IN (SELECT id FROM executions
	WHERE state = 'ready' AND next_attempt_at <= ?2 AND tool IN (SELECT key FROM json_each(?3))
	ORDER BY next_attempt_at LIMIT ?4)
RETURNING {{execution_columns}}, {{decision_round}},
	coalesce((SELECT json_extract(q.policy, '$.version') FROM requests q WHERE q.id = executions.request_id), '');

-- name: transition_execution_row
UPDATE executions SET
	state = ?1,
	claimed_by = CASE WHEN ?1 = 'claimed' THEN claimed_by END,
	claim_expires_at = CASE WHEN ?1 = 'claimed' THEN claim_expires_at END,
	next_attempt_at = ?2 + ?3,
	response_status = coalesce(nullif(?4, 0), response_status),
	response_body = coalesce(?5, response_body),
	provider_ref = coalesce(nullif(?6, ''), provider_ref),
	last_code = nullif(?7, ''),
	last_error = nullif(?8, ''),
	updated_at = ?2
WHERE id = ?9 AND state = ?10 AND attempts = ?11 AND (?12 = '' OR claimed_by = ?12)
RETURNING request_id, {{decision_round}};

-- name: supersede_execution
UPDATE executions SET state = 'superseded', claimed_by = NULL, claim_expires_at = NULL,
	last_code = ?, last_error = ?, updated_at = ?
WHERE id = ? AND state = 'claimed' AND attempts = ? AND claimed_by = ?
RETURNING request_id, {{decision_round}}, snapshot_hash;

-- name: resolve_execution
UPDATE executions SET state = ?1,
	last_code = coalesce(nullif(?2, ''), last_code),
	max_attempts = CASE WHEN ?6 > 0 THEN max(max_attempts, attempts + ?6) ELSE max_attempts END,
	verify_first = CASE WHEN ?7 THEN 0 ELSE verify_first END,
	next_attempt_at = ?3,
	updated_at = ?3
WHERE id = ?4 AND request_id = ?5 AND state = 'needs_review'
RETURNING request_id, attempts, {{decision_round}};

-- name: expired_claims
SELECT id, request_id, {{decision_round}}, attempts, claimed_by FROM executions
WHERE state = 'claimed' AND claim_expires_at <= ? ORDER BY claim_expires_at LIMIT ?;

-- name: expire_claim
UPDATE executions SET state = 'unknown', claimed_by = NULL, claim_expires_at = NULL, next_attempt_at = ?1,
	last_code = ?3, last_error = ?4, updated_at = ?1
WHERE id = ?2;

-- name: lease_unknowns
UPDATE executions SET next_attempt_at = ?1 + ?2
WHERE id IN (SELECT id FROM executions WHERE state = 'unknown' AND next_attempt_at <= ?1 ORDER BY next_attempt_at LIMIT ?3)
RETURNING {{execution_columns}};

-- name: count_unsettled
SELECT
	(SELECT count(*) FROM executions WHERE state = 'unknown'),
	(SELECT count(*) FROM executions WHERE state = 'needs_review');

-- name: unresolved_request_ids
SELECT id FROM (
	SELECT * FROM (SELECT request_id AS id, updated_at FROM executions WHERE state = 'unknown' ORDER BY next_attempt_at LIMIT ?1)
	UNION ALL
	SELECT * FROM (SELECT request_id, updated_at FROM executions WHERE state = 'needs_review' ORDER BY updated_at LIMIT ?1)
) ORDER BY updated_at LIMIT ?1;

-- name: claim_outbox
UPDATE outbox SET next_attempt_at = ?1 + ?2, attempts = attempts + 1
WHERE id IN (SELECT id FROM outbox WHERE state = 'pending' AND next_attempt_at <= ?1 ORDER BY next_attempt_at, id LIMIT ?3)
RETURNING id, kind, request_id, round, surface, destination, data, attempts, coalesce(last_error, ''), created_at;

-- name: renew_outbox
-- ?3 is a JSON array of ids.
UPDATE outbox SET next_attempt_at = max(next_attempt_at, ?1 + ?2)
WHERE id IN (SELECT value FROM json_each(?3)) AND state = 'pending';

-- name: mark_outbox_delivered
UPDATE outbox SET state = 'delivered', delivered_at = ?2,
	last_error = nullif(?3, '') WHERE id = ?1 AND state = 'pending';

-- name: mark_outbox_failed
UPDATE outbox SET state = 'failed', last_error = ?2
	WHERE id = ?1 AND state = 'pending';

-- name: retry_outbox
UPDATE outbox SET next_attempt_at = ?2,
	attempts = max(attempts + ?3, 0),
	last_error = CASE WHEN ?3 < 0 THEN last_error ELSE nullif(?4, '') END WHERE id = ?1 AND state = 'pending';

-- name: post_pending
SELECT EXISTS (SELECT 1 FROM outbox
	WHERE request_id = ? AND round = ? AND kind = ? AND state = 'pending');

-- name: other_post_rows
SELECT EXISTS (SELECT 1 FROM outbox
	WHERE request_id = ?1 AND round = ?2 AND kind = ?4 AND id <> ?3 AND surface IN (?5, ''));

-- name: card_for
SELECT {{card_columns}} FROM cards WHERE request_id = ? AND round = ? AND surface = ?;

-- name: insert_card
INSERT INTO cards (request_id, round, surface, ref, rendered_state, settled, posted_at, rendered_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
ON CONFLICT (request_id, round, surface) DO NOTHING
RETURNING {{card_columns}};


-- name: point_request_at_card
-- The request points at the round's first card: another surface's card of
-- the same round leaves it.
UPDATE requests AS r SET card_surface = ?1, card_ref = ?2 WHERE r.id = ?3 AND r.round = ?4
	AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.request_id = r.id AND c.round = r.round
		AND c.surface = r.card_surface AND c.surface <> ?1 AND c.ref = r.card_ref);

-- name: mark_card_rendered
UPDATE cards SET rendered_state = ?, settled = ?, rendered_at = ?
WHERE request_id = ? AND round = ? AND surface = ?;

-- name: card_state_of
-- What the card of request c.request_id in round c.round must show
-- (store.CardStateOf, which the contract suite holds this to); NULL when the
-- request does not exist.
(SELECT CASE
	WHEN r.round > c.round THEN 'superseded'
	WHEN r.status = 'approved' THEN 'approved/' || coalesce((SELECT e.state || '/' || e.attempts
		FROM decisions d JOIN executions e ON e.decision_id = d.id
		WHERE d.request_id = r.id AND d.round = c.round), 'none')
	ELSE r.status
END FROM requests r WHERE r.id = c.request_id)

-- name: card_state
SELECT {{card_state_of}} FROM (SELECT ?1 AS request_id, ?2 AS round) c;

-- name: enqueue_stale_cards
-- ?3 is how long a failed delivery keeps the sweep from queueing the same
-- card again and ?4 how long a pending round may go without a card (both in
-- microseconds), ?5 and ?6 the kinds of an update and a post, ?7 their data
-- (store.StaleCardsParams). An update is for the stale card's surface.
WITH stale AS (
	SELECT c.request_id, c.round, c.surface FROM cards c
	WHERE NOT c.settled
		AND c.rendered_state IS NOT {{card_state_of}}
		AND NOT EXISTS (SELECT 1 FROM outbox o
			WHERE o.request_id = c.request_id AND o.round = c.round AND o.kind = ?5 AND o.surface IN (c.surface, '')
				AND (o.state = 'pending' OR (o.state = 'failed' AND o.created_at > ?1 - ?3)))
	ORDER BY c.rendered_at
	LIMIT ?2
), unposted AS (
	SELECT r.id AS request_id, r.round FROM requests r
	WHERE r.status = 'pending' AND r.updated_at < ?1 - ?4 AND r.expires_at > ?1
		AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.request_id = r.id AND c.round = r.round)
		AND NOT EXISTS (SELECT 1 FROM outbox o
			WHERE o.request_id = r.id AND o.round = r.round AND o.kind = ?6
				AND (o.state = 'pending' OR (o.state = 'failed' AND o.created_at > ?1 - ?3)))
	ORDER BY r.expires_at
	LIMIT ?2
)
INSERT INTO outbox (kind, request_id, round, data, next_attempt_at, created_at, surface)
SELECT ?5, request_id, round, ?7, ?1, ?1, surface FROM stale
UNION ALL
SELECT ?6, request_id, round, ?7, ?1, ?1, '' FROM unposted;

-- name: requests_by_key_prefix
SELECT {{request_columns}} FROM requests
WHERE key >= ? AND key < ? ORDER BY key LIMIT ?;

-- name: requests_by_effect_string
SELECT {{request_columns}} FROM requests
WHERE id IN (SELECT request_id FROM effect_strings WHERE value = ?) ORDER BY created_at DESC LIMIT ?;

-- name: pending_requests
SELECT {{request_columns}} FROM requests
WHERE status = 'pending' ORDER BY expires_at LIMIT ?;

-- name: recently_decided
SELECT {{request_columns}} FROM requests
WHERE status <> 'pending' ORDER BY updated_at DESC LIMIT ?;

-- name: list_filters
-- What a listing asks of a row: ?2 status, ?3 tool, ?4 run id ('' any), ?5
-- settled (NULL either), and to come after the position ?6, ?7 in listing
-- order (the first page passes a time past every row). settled is
-- store.Settled of the status and the latest execution, by its rule (?9 and
-- ?11 JSON arrays, ?10: store.SettledRule).
(?2 = '' OR status = ?2)
	AND (?3 = '' OR tool = ?3)
	AND (?4 = '' OR run_id = ?4)
	AND (?5 IS NULL OR ?5 = (status IN (SELECT value FROM json_each(?9))
		OR (status = ?10 AND coalesce((SELECT e.state IN (SELECT value FROM json_each(?11)) FROM executions e
			WHERE e.request_id = requests.id ORDER BY e.id DESC LIMIT 1), 0))))
	AND (created_at, id) < (?6, ?7)

-- name: list_requests_of
-- A page of agent ?1's requests, newest first, ?8 at most.
SELECT {{request_columns}} FROM requests
WHERE requested_by = ?1 AND {{list_filters}}
ORDER BY created_at DESC, id DESC LIMIT ?8;

-- name: list_requests
-- A page of every agent's requests (?1 is '' and unused), newest first.
SELECT {{request_columns}} FROM requests
WHERE {{list_filters}}
ORDER BY created_at DESC, id DESC LIMIT ?8;

-- name: insert_request
-- A pruned key (one with a tombstone) is not inserted again.
INSERT INTO requests (id, key, basis_hash, run_id, step, tool, snapshot, payload_hash,
	summary, reason, requested_by, requested_for, expires_at, created_at, updated_at, policy, supersedes)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, nullif(?17, '')
WHERE NOT EXISTS (SELECT 1 FROM tombstones t WHERE t.key = ?2)
ON CONFLICT (key) DO NOTHING
RETURNING {{request_columns}};

-- name: index_effect_string
INSERT INTO effect_strings (value, request_id) VALUES (?, ?);

-- name: request_by_key
SELECT {{request_columns}} FROM requests WHERE key = ?;

-- name: request_by_id
SELECT {{request_columns}} FROM requests WHERE id = ?;

-- name: replay_requests
SELECT {{request_columns}}, EXISTS (SELECT 1 FROM outbox o
		WHERE o.request_id = requests.id AND o.round = requests.round AND o.kind = ?2 AND o.state = 'pending')
FROM requests WHERE key = ?1;

-- name: decide_request
UPDATE requests SET status = ?1, updated_at = ?2, version = version + 1
WHERE id = ?3 AND round = ?4 AND payload_hash = ?5 AND status = 'pending' AND expires_at > ?2
RETURNING {{request_columns}};

-- name: mark_edited
UPDATE requests SET status = 'edited', superseded_by = ?1, updated_at = ?2, version = version + 1
WHERE id = ?3 AND round = ?4 AND payload_hash = ?5 AND status = 'pending' AND expires_at > ?2
RETURNING {{request_columns}};

-- name: cancel_request
UPDATE requests SET status = 'cancelled', updated_at = ?1, version = version + 1
WHERE id = ?2 AND status = 'pending'
RETURNING {{request_columns}};

-- name: expire_requests
UPDATE requests SET status = 'expired', updated_at = ?1, version = version + 1
WHERE id IN (SELECT id FROM requests WHERE status = 'pending' AND expires_at <= ?1 ORDER BY expires_at LIMIT ?2)
RETURNING {{request_columns}};

-- name: reopen_request
-- ?5, when not null, is the new round's policy.
UPDATE requests SET status = 'pending', round = round + 1, updated_at = ?1, round_started_at = ?1, version = version + 1,
	expires_at = max(expires_at, ?1 + ?2), policy = coalesce(?5, policy)
WHERE id = ?3 AND status = 'approved' AND round = ?4
RETURNING {{request_columns}};

-- name: set_card
UPDATE requests SET card_surface = ?, card_ref = ? WHERE id = ?;

-- name: redrive_card
INSERT INTO outbox (kind, request_id, round, next_attempt_at, created_at)
SELECT ?3, r.id, r.round, ?1, ?1 FROM requests r
WHERE r.id = ?2 AND r.status = 'pending' AND r.card_ref IS NULL
	AND NOT EXISTS (SELECT 1 FROM outbox o
		WHERE o.request_id = r.id AND o.round = r.round AND o.kind = ?3 AND o.state = 'pending');

-- name: insert_decision
INSERT INTO decisions (request_id, round, verdict, decided_by, via, payload_hash_seen, decided_at, reason)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
RETURNING {{decision_columns}};

-- name: lock_open_request
-- The request pending in the round with the payload hash and unexpired. The
-- single writer connection serializes voters, so no row lock is needed.
SELECT {{request_columns}} FROM requests
WHERE id = ?1 AND round = ?2 AND payload_hash = ?3 AND status = 'pending' AND expires_at > ?4;

-- name: vote_columns
id, request_id, round, voter, verdict, reason, via, payload_hash_seen, voted_at

-- name: insert_vote
INSERT INTO votes (request_id, round, voter, verdict, reason, via, payload_hash_seen, voted_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (request_id, round, voter) DO NOTHING
RETURNING {{vote_columns}};

-- name: votes_for
SELECT {{vote_columns}} FROM votes WHERE request_id = ? AND round = ? ORDER BY id;

-- name: decision_for
SELECT {{decision_columns}} FROM decisions WHERE request_id = ? AND round = ?;

-- name: latest_decision
SELECT {{decision_columns}} FROM decisions WHERE request_id = ? ORDER BY round DESC LIMIT 1;

-- name: insert_events
INSERT INTO events (id, request_id, at, actor, kind, data, seq, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: next_event_id
SELECT max(coalesce((SELECT max(id) FROM events), 0), coalesce((SELECT max(max_event_id) FROM audit_checkpoints), 0)) + 1;

-- name: chain_end
-- The last chained event of request ?1: its seq and hash; when every event
-- of the request left with its month, its newest checkpoint head.
SELECT seq, hash FROM (
	SELECT seq, hash FROM events WHERE request_id = ?1 AND hash IS NOT NULL
	UNION ALL
	SELECT seq, hash FROM audit_checkpoint_heads WHERE request_id = ?1
) ORDER BY seq DESC LIMIT 1;

-- name: unchained_events
SELECT id, request_id, at, actor, kind, data FROM events WHERE hash IS NULL ORDER BY request_id, id;

-- name: chain_event
UPDATE events SET seq = ?2, prev_hash = ?3, hash = ?4 WHERE id = ?1 AND hash IS NULL;

-- name: audit_chain
SELECT id, request_id, seq, at, actor, kind, data, prev_hash, hash FROM events
WHERE (request_id, seq) > (?1, ?2) ORDER BY request_id, seq LIMIT ?3;

-- name: events_for
SELECT id, request_id, at, actor, kind, data
FROM events WHERE request_id = ? ORDER BY id;

-- name: insert_outbox
-- A row that coalesces (?7) is not queued while one of its kind, request and
-- round waits for its first claim (store.NewOutbox.Coalesce; the single
-- writer keeps a delivery from claiming it meanwhile).
INSERT INTO outbox (kind, request_id, round, data, next_attempt_at, created_at, surface, destination)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?8, ?9
WHERE NOT (?7 AND EXISTS (SELECT 1 FROM outbox w WHERE w.request_id = ?2 AND w.round = ?3 AND w.kind = ?1
	AND w.surface = ?8 AND w.state = 'pending' AND w.attempts = 0));

-- name: due_nudges
-- Pending requests of tool ?1 whose round began at or before ?2, with their
-- round's card posted, that have no nudge of kind ?3 queued for that round;
-- longest waiting first.
SELECT {{request_columns}} FROM requests r
WHERE r.status = 'pending' AND r.tool = ?1
	AND coalesce(r.round_started_at, r.created_at) <= ?2
	AND r.expires_at > ?5
	AND EXISTS (SELECT 1 FROM cards c WHERE c.request_id = r.id AND c.round = r.round)
	AND NOT EXISTS (SELECT 1 FROM outbox o
		WHERE o.request_id = r.id AND o.round = r.round AND json_extract(o.data, '$.nudge') = ?3)
ORDER BY coalesce(r.round_started_at, r.created_at)
LIMIT ?4;

-- name: queue_nudge
-- The unique index outbox_nudge_once keeps one per kind and round; the one
-- writer connection orders it against decisions.
INSERT INTO outbox (kind, request_id, round, data, next_attempt_at, created_at)
SELECT ?5, id, round, ?3, ?4, ?4 FROM requests
WHERE id = ?1 AND round = ?2 AND status = 'pending'
ON CONFLICT DO NOTHING
RETURNING created_at;

-- name: nudge_queued
SELECT EXISTS (SELECT 1 FROM outbox
	WHERE request_id = ?1 AND round = ?2 AND json_extract(data, '$.nudge') = ?3);

-- name: pending_by_tool
SELECT tool, count(*), min(coalesce(round_started_at, created_at))
FROM requests WHERE status = 'pending' GROUP BY tool ORDER BY tool;

-- name: callback_columns
id, delivery_id, request_id, agent, event, state, attempts, next_attempt_at, give_up_at,
	last_status, coalesce(last_error, ''), created_at

-- name: insert_callback
INSERT INTO callbacks (delivery_id, request_id, agent, event, next_attempt_at, give_up_at, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?5);

-- name: claim_callbacks
UPDATE callbacks SET next_attempt_at = ?1 + ?2, attempts = attempts + 1
WHERE id IN (SELECT id FROM callbacks WHERE state = 'pending' AND next_attempt_at <= ?1 ORDER BY next_attempt_at, id LIMIT ?3)
RETURNING {{callback_columns}};

-- name: renew_callback
-- ?2, the claim's lease, identifies the attempt.
UPDATE callbacks SET next_attempt_at = ?3 + ?4
WHERE id = ?1 AND state = 'pending' AND next_attempt_at = ?2
RETURNING next_attempt_at;

-- name: mark_callback_delivered
-- ?4, the claim's lease, identifies the attempt (see Ledger.MarkCallbackDelivered).
UPDATE callbacks SET state = 'delivered', delivered_at = ?3, last_status = ?2, last_error = NULL
WHERE id = ?1 AND state = 'pending' AND next_attempt_at = ?4;

-- name: retry_callback
UPDATE callbacks SET last_status = nullif(?3, 0), last_error = nullif(?4, ''),
	state = CASE WHEN ?5 >= give_up_at THEN 'failed' ELSE 'pending' END,
	next_attempt_at = ?5 + ?2
WHERE id = ?1 AND state = 'pending' AND next_attempt_at = ?6
RETURNING state;

-- name: latest_callback
SELECT {{callback_columns}} FROM callbacks WHERE request_id = ? ORDER BY id DESC LIMIT 1;

-- name: redrive_callback
-- Attempts start again from 0, and with them the backoff.
UPDATE callbacks SET state = 'pending', next_attempt_at = ?2, attempts = 0, give_up_at = ?2 + ?3, delivered_at = NULL
WHERE id = (SELECT max(id) FROM callbacks WHERE request_id = ?1)
RETURNING {{callback_columns}};

-- name: count_callback_backlog
SELECT count(*) FROM callbacks WHERE state = 'pending';

-- name: count_outbox_backlog
SELECT count(*) FROM outbox WHERE state = 'pending';

-- name: ready_by_tool
SELECT tool, count(*) AS count FROM executions WHERE state = 'ready' GROUP BY tool ORDER BY tool;

-- name: tombstone
SELECT key, basis_hash, agent, status, settled_at, pruned_at FROM tombstones WHERE key = ?;

-- name: settled_requests
-- Up to ?2 requests settled before ?1: in a final status (?3, a JSON
-- array), or approved (?4) with their newest execution in a final state
-- (?5); none with a callback still pending. ?6 is the time of the prune.
-- status <> 'pending' and the updated_at bound are requests_recently_decided's.
SELECT r.id, r.key, r.basis_hash, r.requested_by, coalesce(x.state, r.status),
	max(r.updated_at, coalesce(x.updated_at, r.updated_at)), ?6
FROM requests r
LEFT JOIN executions x ON r.status = ?4
	AND x.id = (SELECT max(e.id) FROM executions e WHERE e.request_id = r.id)
WHERE r.status <> 'pending' AND r.updated_at < ?1
	AND (r.status IN (SELECT value FROM json_each(?3))
		OR (r.status = ?4 AND x.state IN (SELECT value FROM json_each(?5)) AND x.updated_at < ?1))
	AND NOT EXISTS (SELECT 1 FROM callbacks c WHERE c.request_id = r.id AND c.state = 'pending')
ORDER BY r.updated_at
LIMIT ?2;

-- name: insert_tombstone
INSERT INTO tombstones (key, basis_hash, agent, status, settled_at, pruned_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (key) DO NOTHING;

-- name: delete_request_rows
-- Each statement removes one table's rows of request ?1, children first;
-- events keep theirs (no foreign key).
DELETE FROM callbacks WHERE request_id = ?1;
DELETE FROM outbox WHERE request_id = ?1;
DELETE FROM cards WHERE request_id = ?1;
DELETE FROM votes WHERE request_id = ?1;
DELETE FROM executions WHERE request_id = ?1;
DELETE FROM decisions WHERE request_id = ?1;
DELETE FROM effect_strings WHERE request_id = ?1;
DELETE FROM requests WHERE id = ?1;

-- name: oldest_event_at
SELECT min(at) FROM events;

-- name: month_events
-- The hashes of the events in [?1, ?2), in the chains' order.
SELECT request_id, seq, hash FROM events WHERE at >= ?1 AND at < ?2 ORDER BY request_id, seq;

-- name: last_checkpoint_hash
SELECT coalesce((SELECT hash FROM audit_checkpoints ORDER BY id DESC LIMIT 1), '');

-- name: next_checkpoint_id
SELECT coalesce(max(id), 0) + 1 FROM audit_checkpoints;

-- name: insert_checkpoint
INSERT INTO audit_checkpoints (id, partition, range_from, range_to, events, digest, dropped_by, dropped_at, prev_hash, hash, max_event_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(id), 0) FROM events WHERE at >= ?11 AND at < ?12));

-- name: insert_checkpoint_head
INSERT INTO audit_checkpoint_heads (checkpoint_id, request_id, seq, hash) VALUES (?, ?, ?, ?);

-- name: allow_drop
-- audit_drop lets the events before ?1 be deleted until end_drop, in the
-- same transaction.
INSERT INTO audit_drop (before_at) VALUES (?1);

-- name: delete_month
DELETE FROM events WHERE at >= ?1 AND at < ?2;

-- name: end_drop
DELETE FROM audit_drop;

-- name: audit_checkpoints
SELECT id, partition, range_from, range_to, events, digest, dropped_by, dropped_at, prev_hash, hash
FROM audit_checkpoints ORDER BY id;

-- name: checkpoint_heads
SELECT request_id, seq, hash FROM audit_checkpoint_heads
WHERE checkpoint_id = ?1 AND request_id > ?2 ORDER BY request_id LIMIT ?3;

-- name: last_checkpoint_head
SELECT request_id, seq, hash FROM audit_checkpoint_heads WHERE request_id = ?1 ORDER BY seq DESC LIMIT 1;

-- name: checkpoint_head_from
SELECT request_id, seq, hash FROM audit_checkpoint_heads WHERE request_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT 1;

-- name: take_post_slot
-- Returns the microseconds from now (?1) until the slot taken.
INSERT INTO surface_pacing (surface, destination, next_post_at) VALUES (?2, ?4, ?1 + ?3)
ON CONFLICT (surface, destination) DO UPDATE SET next_post_at = max(next_post_at, ?1, coalesce(paused_until, ?1)) + ?3
RETURNING next_post_at - ?3 - ?1;

-- name: pause_lane
INSERT INTO surface_pacing (surface, destination, next_post_at, paused_until) VALUES (?2, ?4, ?1, ?1 + ?3)
ON CONFLICT (surface, destination) DO UPDATE SET paused_until = max(coalesce(paused_until, 0), excluded.paused_until);

-- name: lane_pause
SELECT coalesce((SELECT max(coalesce(paused_until, 0) - ?1, 0) FROM surface_pacing WHERE surface = ?2 AND destination = ?3), 0);

-- name: flag_unsettled_executions
UPDATE executions SET verify_first = 1 WHERE state NOT IN ('succeeded', 'failed', 'superseded');

-- name: insert_restore
INSERT INTO restores (restored_at, guard_until, source, flagged) VALUES (?, ?, ?, ?) RETURNING id;

-- name: grant_columns
id, tool, agent, grantor, request_id, round, match, amount_field, amount_ceiling,
	created_at, expires_at, revoked_at, revoked_by

-- name: insert_grant
INSERT INTO grants (id, tool, agent, grantor, request_id, round, match, amount_field, amount_ceiling, created_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: grant_by_id
SELECT {{grant_columns}} FROM grants WHERE id = ?;

-- name: live_grants
SELECT {{grant_columns}} FROM grants
WHERE tool = ?1 AND agent = ?2 AND revoked_at IS NULL AND expires_at > ?3
ORDER BY created_at, id;

-- name: list_grants
SELECT {{grant_columns}} FROM grants
WHERE (?1 = '' OR grantor = ?1) AND (?2 IS NULL OR (revoked_at IS NULL AND expires_at > ?2))
ORDER BY created_at DESC, id DESC LIMIT ?3;

-- name: revoke_grant
UPDATE grants SET revoked_at = ?3, revoked_by = ?2
WHERE id = ?1 AND revoked_at IS NULL AND expires_at > ?3 AND (?4 = '' OR grantor = ?4)
RETURNING {{grant_columns}};

-- name: hold_grant
-- The single writer serializes a revocation with the approval: no lock.
SELECT 1 FROM grants WHERE id = ?1 AND revoked_at IS NULL AND expires_at > ?2;

-- name: count_surface_attempt
INSERT INTO surface_attempts (surface, key, attempts, expires_at) VALUES (?1, ?2, 1, ?3)
ON CONFLICT (surface, key) DO UPDATE SET attempts = attempts + 1, expires_at = max(expires_at, excluded.expires_at)
RETURNING attempts;

-- name: delete_expired_surface_attempts
DELETE FROM surface_attempts WHERE expires_at < ?1;

-- name: surface_attempts
SELECT coalesce((SELECT attempts FROM surface_attempts WHERE surface = ?1 AND key = ?2), 0);

-- name: requests_by_tool_effect_string
SELECT {{request_columns}} FROM requests
WHERE id IN (SELECT request_id FROM effect_strings WHERE value = ?1) AND tool = ?2 AND created_at < ?3
ORDER BY created_at DESC LIMIT ?4;

-- name: preview_for
SELECT request_id, state, coalesce(changes, '[]'), summary, reason, started_at, finished_at
FROM previews WHERE request_id = ?;

-- name: claim_preview
INSERT INTO previews (request_id, state, started_at) VALUES (?1, ?2, ?3)
ON CONFLICT (request_id) DO UPDATE SET started_at = excluded.started_at
	WHERE previews.state = excluded.state AND previews.started_at < ?4
RETURNING 1;

-- name: record_preview
UPDATE previews SET state = ?2, changes = ?3, summary = ?4, reason = ?5, finished_at = ?6
WHERE request_id = ?1 AND state = ?7
RETURNING 1;
