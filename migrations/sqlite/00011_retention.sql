-- +goose Up

-- tombstones: what remains of a pruned request, so its key never runs
-- twice (see PostgreSQL's migration of the same number). Times are
-- microseconds since the epoch, as everywhere in this schema.
CREATE TABLE tombstones (
    key        TEXT    PRIMARY KEY,
    basis_hash TEXT    NOT NULL,
    agent      TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    settled_at INTEGER NOT NULL,
    pruned_at  INTEGER NOT NULL
) WITHOUT ROWID;

-- The audit trail outlives the requests it tells of: events keep their
-- request's id without a foreign key. SQLite drops a constraint only by
-- building the table again; its append-only triggers come back with it.
CREATE TABLE events_kept (
    id         INTEGER PRIMARY KEY,
    request_id TEXT    NOT NULL,
    at         INTEGER NOT NULL,
    actor      TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    data       TEXT    NOT NULL DEFAULT '{}'
);
INSERT INTO events_kept (id, request_id, at, actor, kind, data)
SELECT id, request_id, at, actor, kind, data FROM events ORDER BY id;
DROP TABLE events;
ALTER TABLE events_kept RENAME TO events;
CREATE INDEX events_request ON events (request_id, id);

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

-- +goose Down
-- The events keep no foreign key: those of pruned requests name requests
-- that are gone.
DROP TABLE tombstones;
