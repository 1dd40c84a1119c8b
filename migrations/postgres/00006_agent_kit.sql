-- +goose Up

-- version counts the changes an agent can see in a request's representation,
-- so a long-poll can ask "anything after N?" (GET ?since=N). The request's own
-- transitions (status, round) bump it in their statements; an execution's
-- changes (its state, attempts and outcome) bump it from the trigger below, so
-- every path that moves an execution, batched or not, counts.
ALTER TABLE requests ADD COLUMN version bigint NOT NULL DEFAULT 1;

-- +goose StatementBegin
CREATE FUNCTION bump_request_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE requests SET version = version + 1 WHERE id = NEW.request_id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER executions_version_insert AFTER INSERT ON executions
    FOR EACH ROW EXECUTE FUNCTION bump_request_version();
CREATE TRIGGER executions_version_update AFTER UPDATE ON executions
    FOR EACH ROW WHEN ((OLD.state, OLD.attempts, OLD.last_code, OLD.provider_ref, OLD.response_status, OLD.response_body)
        IS DISTINCT FROM (NEW.state, NEW.attempts, NEW.last_code, NEW.provider_ref, NEW.response_status, NEW.response_body))
    EXECUTE FUNCTION bump_request_version();

-- callbacks: signed POSTs to an agent's callback URL, written in the
-- transaction of the transition they report (request.settled,
-- request.needs_review) and delivered at least once. delivery_id is what the
-- agent dedupes on; it stays the same across retries and redrives.
-- give_up_at ends the retries (at least 24 hours after the row was queued or
-- last redriven).
CREATE TABLE callbacks (
    id              bigserial   PRIMARY KEY,
    delivery_id     uuid        NOT NULL UNIQUE DEFAULT gen_random_uuid(),
    request_id      uuid        NOT NULL REFERENCES requests (id),
    agent           text        NOT NULL,
    event           text        NOT NULL CHECK (event IN ('request.settled', 'request.needs_review')),
    state           text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    give_up_at      timestamptz NOT NULL,
    last_status     integer,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz
);

CREATE INDEX callbacks_due ON callbacks (next_attempt_at) WHERE state = 'pending';
-- The representation and redrive read a request's latest delivery.
CREATE INDEX callbacks_request ON callbacks (request_id, id);

-- +goose Down
DROP TABLE callbacks;
DROP TRIGGER executions_version_update ON executions;
DROP TRIGGER executions_version_insert ON executions;
DROP FUNCTION bump_request_version;
ALTER TABLE requests DROP COLUMN version;
