-- +goose Up

-- requests: one row per intent key. The effect snapshot (canonical bytes) never
-- changes after insert; status and round follow the review.
CREATE TABLE requests (
    id            uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    -- Byte order (C collation) lets the unique index also serve key-prefix lookups.
    key           text        COLLATE "C" NOT NULL UNIQUE,
    basis_hash    text        NOT NULL,
    run_id        text        NOT NULL,
    step          jsonb       NOT NULL,
    tool          text        NOT NULL,
    effect        jsonb       NOT NULL,
    snapshot      bytea       NOT NULL,
    payload_hash  text        NOT NULL,
    summary       text        NOT NULL DEFAULT '',
    reason        text        NOT NULL DEFAULT '',
    requested_by  text        NOT NULL,
    requested_for text        NOT NULL DEFAULT '',
    status        text        NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'cancelled')),
    round         integer     NOT NULL DEFAULT 1 CHECK (round >= 1),
    expires_at    timestamptz NOT NULL,
    card_channel  text,
    card_ts       text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- The expiry sweep scans only pending rows.
CREATE INDEX requests_pending_expiry ON requests (expires_at) WHERE status = 'pending';

-- decisions: the first verdict per (request, round) wins; the unique
-- constraint backs the conditional status update.
CREATE TABLE decisions (
    id                bigserial   PRIMARY KEY,
    request_id        uuid        NOT NULL REFERENCES requests (id),
    round             integer     NOT NULL,
    verdict           text        NOT NULL CHECK (verdict IN ('approve', 'reject')),
    decided_by        text        NOT NULL,
    via               text        NOT NULL,
    payload_hash_seen text        NOT NULL,
    decided_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (request_id, round)
);

-- executions: what the executor claims. key and snapshot are copied from the
-- request at approval, never recomputed.
CREATE TABLE executions (
    id               bigserial   PRIMARY KEY,
    request_id       uuid        NOT NULL REFERENCES requests (id),
    decision_id      bigint      NOT NULL UNIQUE REFERENCES decisions (id),
    key              text        NOT NULL,
    tool             text        NOT NULL,
    snapshot         bytea       NOT NULL,
    snapshot_hash    text        NOT NULL,
    state            text        NOT NULL DEFAULT 'ready'
                     CHECK (state IN ('ready', 'claimed', 'succeeded', 'failed', 'unknown', 'needs_review', 'superseded')),
    attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts     integer     NOT NULL CHECK (max_attempts >= 1),
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    claimed_by       text,
    claim_expires_at timestamptz,
    last_code        text,
    last_error       text,
    response_status  integer,
    response_body    bytea,
    provider_ref     text,
    approved_at      timestamptz NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- At most one live execution per request.
CREATE UNIQUE INDEX executions_one_live ON executions (request_id)
    WHERE state NOT IN ('succeeded', 'failed', 'superseded');
-- The dispatcher's claim scans only ready rows in due order.
CREATE INDEX executions_claimable ON executions (next_attempt_at) WHERE state = 'ready';
-- The reconciler scans claims past their timeout and unknowns.
CREATE INDEX executions_claimed ON executions (claim_expires_at) WHERE state = 'claimed';
CREATE INDEX executions_unknown ON executions (next_attempt_at) WHERE state = 'unknown';

-- outbox: Slack posts and updates, written with the state change that needs them.
CREATE TABLE outbox (
    id              bigserial   PRIMARY KEY,
    kind            text        NOT NULL CHECK (kind IN ('post_card', 'update_card', 'thread_reply')),
    request_id      uuid        NOT NULL REFERENCES requests (id),
    round           integer     NOT NULL,
    state           text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    data            jsonb       NOT NULL DEFAULT '{}',
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz
);

CREATE INDEX outbox_deliverable ON outbox (next_attempt_at) WHERE state = 'pending';
-- Every lookup of a request's deliveries names the round and the kind.
CREATE INDEX outbox_request ON outbox (request_id, round, kind);

-- events: the append-only audit trail.
CREATE TABLE events (
    id         bigserial   PRIMARY KEY,
    request_id uuid        NOT NULL REFERENCES requests (id),
    at         timestamptz NOT NULL DEFAULT now(),
    actor      text        NOT NULL,
    kind       text        NOT NULL,
    data       jsonb       NOT NULL DEFAULT '{}'
);

CREATE INDEX events_request ON events (request_id, id);

-- +goose StatementBegin
CREATE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER events_no_update_delete BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();

-- Change notifications: long-polling agents wait on countersign_change (payload:
-- request id); the dispatcher wakes on countersign_ready.
-- +goose StatementBegin
CREATE FUNCTION notify_request_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('countersign_change', NEW.id::text);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION notify_execution_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('countersign_change', NEW.request_id::text);
    IF NEW.state = 'ready' THEN
        PERFORM pg_notify('countersign_ready', '');
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER requests_notify AFTER UPDATE OF status, round ON requests
    FOR EACH ROW EXECUTE FUNCTION notify_request_change();
CREATE TRIGGER executions_notify AFTER INSERT OR UPDATE OF state ON executions
    FOR EACH ROW EXECUTE FUNCTION notify_execution_change();

-- +goose Down
DROP TABLE events, outbox, executions, decisions, requests;
DROP FUNCTION events_append_only, notify_request_change, notify_execution_change;
