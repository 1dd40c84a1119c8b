-- +goose Up

-- Approve with edit (see PostgreSQL's migration of the same number): the
-- columns that link an edit and its original, by key.
ALTER TABLE requests ADD COLUMN supersedes TEXT;
ALTER TABLE requests ADD COLUMN superseded_by TEXT;

-- The edited status. SQLite cannot change a CHECK in place, and rebuilding
-- requests would mean rebuilding every table that references it: the
-- constraint's text is rewritten in the schema instead (SQLite's documented
-- way to change a CHECK, which leaves the stored rows' format alone), and
-- the schema reloaded. The columns are added first: ADD COLUMN splices the
-- schema text at an offset it parsed before.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
SET sql = replace(sql, '''expired'', ''cancelled'')', '''expired'', ''cancelled'', ''edited'')')
WHERE type = 'table' AND name = 'requests';
PRAGMA writable_schema = RESET;

-- request.edited callbacks; the table is rebuilt, as 00024 did.
CREATE TABLE callbacks_new (
    id              INTEGER PRIMARY KEY,
    delivery_id     TEXT    NOT NULL UNIQUE,
    request_id      TEXT    NOT NULL REFERENCES requests (id),
    agent           TEXT    NOT NULL,
    event           TEXT    NOT NULL CHECK (event IN ('request.settled', 'request.needs_review', 'request.approved', 'request.edited')),
    state           TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    give_up_at      INTEGER NOT NULL,
    last_status     INTEGER,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    delivered_at    INTEGER
);
INSERT INTO callbacks_new SELECT id, delivery_id, request_id, agent, event, state, attempts, next_attempt_at,
    give_up_at, last_status, last_error, created_at, delivered_at FROM callbacks;
DROP TABLE callbacks;
ALTER TABLE callbacks_new RENAME TO callbacks;
CREATE INDEX callbacks_due ON callbacks (next_attempt_at) WHERE state = 'pending';
CREATE INDEX callbacks_request ON callbacks (request_id, id);

-- +goose Down
DELETE FROM callbacks WHERE event = 'request.edited';
CREATE TABLE callbacks_old (
    id              INTEGER PRIMARY KEY,
    delivery_id     TEXT    NOT NULL UNIQUE,
    request_id      TEXT    NOT NULL REFERENCES requests (id),
    agent           TEXT    NOT NULL,
    event           TEXT    NOT NULL CHECK (event IN ('request.settled', 'request.needs_review', 'request.approved')),
    state           TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    give_up_at      INTEGER NOT NULL,
    last_status     INTEGER,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    delivered_at    INTEGER
);
INSERT INTO callbacks_old SELECT id, delivery_id, request_id, agent, event, state, attempts, next_attempt_at,
    give_up_at, last_status, last_error, created_at, delivered_at FROM callbacks;
DROP TABLE callbacks;
ALTER TABLE callbacks_old RENAME TO callbacks;
CREATE INDEX callbacks_due ON callbacks (next_attempt_at) WHERE state = 'pending';
CREATE INDEX callbacks_request ON callbacks (request_id, id);

UPDATE requests SET status = 'cancelled' WHERE status = 'edited';
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
SET sql = replace(sql, '''expired'', ''cancelled'', ''edited'')', '''expired'', ''cancelled'')')
WHERE type = 'table' AND name = 'requests';
PRAGMA writable_schema = RESET;
ALTER TABLE requests DROP COLUMN superseded_by;
ALTER TABLE requests DROP COLUMN supersedes;
