-- +goose Up

-- The embedded ledger: the PostgreSQL schema (migrations/0000{1,2,3}) in
-- SQLite terms. Ids are UUID text in lowercase; times are INTEGER unix
-- microseconds in UTC (PostgreSQL's precision), so they compare and sort as
-- numbers; JSON is text.

-- requests: one row per intent key. The snapshot never changes after insert;
-- status and round follow the review. The BINARY collation of key is byte
-- order, so its unique index also serves key-prefix lookups.
CREATE TABLE requests (
    id            TEXT    PRIMARY KEY,
    key           TEXT    NOT NULL UNIQUE,
    basis_hash    TEXT    NOT NULL,
    run_id        TEXT    NOT NULL,
    step          TEXT    NOT NULL,
    tool          TEXT    NOT NULL,
    snapshot      BLOB    NOT NULL,
    payload_hash  TEXT    NOT NULL,
    summary       TEXT    NOT NULL DEFAULT '',
    reason        TEXT    NOT NULL DEFAULT '',
    requested_by  TEXT    NOT NULL,
    requested_for TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'cancelled')),
    round         INTEGER NOT NULL DEFAULT 1 CHECK (round >= 1),
    expires_at    INTEGER NOT NULL,
    card_channel  TEXT,
    card_ts       TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);

-- The expiry sweep scans only pending rows.
CREATE INDEX requests_pending_expiry ON requests (expires_at) WHERE status = 'pending';

-- effect_strings: every string value (1 to 200 characters) at any depth of a
-- request's effect, written with the request, so a support engineer can find
-- requests by a business id. PostgreSQL computes the same list with
-- countersign_effect_strings under a GIN index.
CREATE TABLE effect_strings (
    value      TEXT NOT NULL,
    request_id TEXT NOT NULL REFERENCES requests (id),
    PRIMARY KEY (value, request_id)
) WITHOUT ROWID;

-- decisions: the first verdict per (request, round) wins.
CREATE TABLE decisions (
    id                INTEGER PRIMARY KEY,
    request_id        TEXT    NOT NULL REFERENCES requests (id),
    round             INTEGER NOT NULL,
    verdict           TEXT    NOT NULL CHECK (verdict IN ('approve', 'reject')),
    decided_by        TEXT    NOT NULL,
    via               TEXT    NOT NULL,
    payload_hash_seen TEXT    NOT NULL,
    decided_at        INTEGER NOT NULL,
    UNIQUE (request_id, round)
);

-- executions: what the executor claims. key and snapshot are copied from the
-- request at approval, never recomputed.
CREATE TABLE executions (
    id               INTEGER PRIMARY KEY,
    request_id       TEXT    NOT NULL REFERENCES requests (id),
    decision_id      INTEGER NOT NULL UNIQUE REFERENCES decisions (id),
    key              TEXT    NOT NULL,
    tool             TEXT    NOT NULL,
    snapshot         BLOB    NOT NULL,
    snapshot_hash    TEXT    NOT NULL,
    state            TEXT    NOT NULL DEFAULT 'ready'
                     CHECK (state IN ('ready', 'claimed', 'succeeded', 'failed', 'unknown', 'needs_review', 'superseded')),
    attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts     INTEGER NOT NULL CHECK (max_attempts >= 1),
    next_attempt_at  INTEGER NOT NULL,
    claimed_by       TEXT,
    claim_expires_at INTEGER,
    last_code        TEXT,
    last_error       TEXT,
    response_status  INTEGER,
    response_body    BLOB,
    provider_ref     TEXT,
    approved_at      INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);

-- At most one live execution per request.
CREATE UNIQUE INDEX executions_one_live ON executions (request_id)
    WHERE state NOT IN ('succeeded', 'failed', 'superseded');
-- The dispatcher's claim scans only ready rows in due order.
CREATE INDEX executions_claimable ON executions (next_attempt_at) WHERE state = 'ready';
-- The reconciler scans claims past their timeout and unknowns.
CREATE INDEX executions_claimed ON executions (claim_expires_at) WHERE state = 'claimed';
CREATE INDEX executions_unknown ON executions (next_attempt_at) WHERE state = 'unknown';
CREATE INDEX executions_needs_review ON executions (updated_at) WHERE state = 'needs_review';
-- A lookup reads every execution of one request.
CREATE INDEX executions_request ON executions (request_id, id);

-- outbox: Slack posts and updates, written with the state change that needs them.
CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY,
    kind            TEXT    NOT NULL CHECK (kind IN ('post_card', 'update_card', 'thread_reply')),
    request_id      TEXT    NOT NULL REFERENCES requests (id),
    round           INTEGER NOT NULL,
    state           TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    data            TEXT    NOT NULL DEFAULT '{}',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    delivered_at    INTEGER
);

CREATE INDEX outbox_deliverable ON outbox (next_attempt_at) WHERE state = 'pending';
-- Every lookup of a request's deliveries names the round and the kind.
CREATE INDEX outbox_request ON outbox (request_id, round, kind);

-- events: the append-only audit trail.
CREATE TABLE events (
    id         INTEGER PRIMARY KEY,
    request_id TEXT    NOT NULL REFERENCES requests (id),
    at         INTEGER NOT NULL,
    actor      TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    data       TEXT    NOT NULL DEFAULT '{}'
);

CREATE INDEX events_request ON events (request_id, id);

-- SQLite has no TRUNCATE: refusing DELETE refuses every way to remove rows.
-- +goose StatementBegin
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events is append-only: UPDATE is not allowed');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events is append-only: DELETE is not allowed');
END;
-- +goose StatementEnd

-- cards: the Slack message that shows one round of a request. rendered_state is
-- the card state the message last showed, so the convergence sweep finds cards
-- whose last update did not land; settled cards leave the sweep's index.
CREATE TABLE cards (
    request_id     TEXT    NOT NULL REFERENCES requests (id),
    round          INTEGER NOT NULL,
    channel        TEXT    NOT NULL,
    ts             TEXT    NOT NULL,
    rendered_state TEXT    NOT NULL DEFAULT '',
    settled        INTEGER NOT NULL DEFAULT 0,
    posted_at      INTEGER NOT NULL,
    rendered_at    INTEGER NOT NULL,
    PRIMARY KEY (request_id, round)
);

CREATE INDEX cards_unsettled ON cards (rendered_at) WHERE NOT settled;

-- +goose Down
DROP TABLE cards;
DROP TABLE events;
DROP TABLE outbox;
DROP TABLE executions;
DROP TABLE decisions;
DROP TABLE effect_strings;
DROP TABLE requests;
