-- +goose Up

-- version counts the changes an agent can see in a request's representation
-- (see migrations/postgres/00006): the request's own transitions bump it in
-- their statements, an execution's changes from the triggers below.
ALTER TABLE requests ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

-- +goose StatementBegin
CREATE TRIGGER executions_version_insert AFTER INSERT ON executions
BEGIN
    UPDATE requests SET version = version + 1 WHERE id = NEW.request_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER executions_version_update AFTER UPDATE ON executions
WHEN OLD.state IS NOT NEW.state OR OLD.attempts IS NOT NEW.attempts OR OLD.last_code IS NOT NEW.last_code
    OR OLD.provider_ref IS NOT NEW.provider_ref OR OLD.response_status IS NOT NEW.response_status
    OR OLD.response_body IS NOT NEW.response_body
BEGIN
    UPDATE requests SET version = version + 1 WHERE id = NEW.request_id;
END;
-- +goose StatementEnd

-- callbacks: signed POSTs to an agent's callback URL (see
-- migrations/postgres/00006). delivery_id is a UUID written by the driver.
CREATE TABLE callbacks (
    id              INTEGER PRIMARY KEY,
    delivery_id     TEXT    NOT NULL UNIQUE,
    request_id      TEXT    NOT NULL REFERENCES requests (id),
    agent           TEXT    NOT NULL,
    event           TEXT    NOT NULL CHECK (event IN ('request.settled', 'request.needs_review')),
    state           TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    give_up_at      INTEGER NOT NULL,
    last_status     INTEGER,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    delivered_at    INTEGER
);

CREATE INDEX callbacks_due ON callbacks (next_attempt_at) WHERE state = 'pending';
CREATE INDEX callbacks_request ON callbacks (request_id, id);

-- +goose Down
DROP TABLE callbacks;
DROP TRIGGER executions_version_update;
DROP TRIGGER executions_version_insert;
ALTER TABLE requests DROP COLUMN version;
