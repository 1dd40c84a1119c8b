-- +goose Up

-- The embedded store's audit trail leaves by whole months too (see
-- PostgreSQL's migration of the same number), without partitions: the
-- driver deletes a month's events in the transaction that records its
-- checkpoint, and only while audit_drop names the month's end. Times are
-- microseconds since the epoch.
CREATE TABLE audit_checkpoints (
    id         INTEGER PRIMARY KEY,
    partition  TEXT    NOT NULL,
    range_from INTEGER NOT NULL,
    range_to   INTEGER NOT NULL,
    events     INTEGER NOT NULL,
    digest     TEXT    NOT NULL,
    dropped_by TEXT    NOT NULL,
    dropped_at INTEGER NOT NULL,
    prev_hash  TEXT    NOT NULL,
    hash       TEXT    NOT NULL,
    -- The highest event id dropped, so no id is given twice (events has
    -- no sequence of its own: its next id is the highest there plus one).
    max_event_id INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE audit_checkpoint_heads (
    checkpoint_id INTEGER NOT NULL REFERENCES audit_checkpoints (id),
    request_id    TEXT    NOT NULL,
    seq           INTEGER NOT NULL,
    hash          TEXT    NOT NULL,
    PRIMARY KEY (checkpoint_id, request_id)
) WITHOUT ROWID;
CREATE INDEX audit_checkpoint_heads_request ON audit_checkpoint_heads (request_id, seq);

-- +goose StatementBegin
CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE ON audit_checkpoints
BEGIN
    SELECT RAISE(ABORT, 'audit_checkpoints is append-only: UPDATE is not allowed');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER audit_checkpoints_no_delete BEFORE DELETE ON audit_checkpoints
BEGIN
    SELECT RAISE(ABORT, 'audit_checkpoints is append-only: DELETE is not allowed');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER audit_checkpoint_heads_no_update BEFORE UPDATE ON audit_checkpoint_heads
BEGIN
    SELECT RAISE(ABORT, 'audit_checkpoint_heads is append-only: UPDATE is not allowed');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER audit_checkpoint_heads_no_delete BEFORE DELETE ON audit_checkpoint_heads
BEGIN
    SELECT RAISE(ABORT, 'audit_checkpoint_heads is append-only: DELETE is not allowed');
END;
-- +goose StatementEnd

-- audit_drop holds, only inside the transaction that drops a month, that
-- month's end: an event before it may then be deleted, and no other.
CREATE TABLE audit_drop (before_at INTEGER NOT NULL);

DROP TRIGGER events_no_delete;
-- +goose StatementBegin
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM audit_drop WHERE OLD.at < audit_drop.before_at)
BEGIN
    SELECT RAISE(ABORT, 'events is append-only: DELETE is not allowed');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER events_no_delete;
-- +goose StatementBegin
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events is append-only: DELETE is not allowed');
END;
-- +goose StatementEnd
DROP TABLE audit_drop;
DROP TABLE audit_checkpoint_heads;
DROP TABLE audit_checkpoints;
