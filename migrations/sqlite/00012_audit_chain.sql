-- +goose Up

-- Tamper evidence: each request's audit events form a hash chain (see
-- store.AuditEvent and PostgreSQL's migration of the same number). The
-- driver computes seq, prev_hash and hash as it inserts an event, in its
-- write transaction; the events already there are chained once, by the
-- driver, after this migration (SQLite has no SHA-256 of its own), which is
-- why an UPDATE is refused only once an event has its hash.
ALTER TABLE events ADD COLUMN seq INTEGER;
ALTER TABLE events ADD COLUMN prev_hash TEXT;
ALTER TABLE events ADD COLUMN hash TEXT;
CREATE UNIQUE INDEX events_chain ON events (request_id, seq);

DROP TRIGGER events_no_update;
-- +goose StatementBegin
CREATE TRIGGER events_no_update BEFORE UPDATE ON events WHEN OLD.hash IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'events is append-only: UPDATE is not allowed');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER events_no_update;
-- +goose StatementBegin
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events is append-only: UPDATE is not allowed');
END;
-- +goose StatementEnd
DROP INDEX events_chain;
