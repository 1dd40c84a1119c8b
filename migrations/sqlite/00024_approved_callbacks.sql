-- +goose Up

-- request.approved callbacks (see PostgreSQL's migration of the same
-- number). SQLite cannot change a CHECK in place: the table is rebuilt.
CREATE TABLE callbacks_new (
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
INSERT INTO callbacks_new SELECT id, delivery_id, request_id, agent, event, state, attempts, next_attempt_at,
    give_up_at, last_status, last_error, created_at, delivered_at FROM callbacks;
DROP TABLE callbacks;
ALTER TABLE callbacks_new RENAME TO callbacks;
CREATE INDEX callbacks_due ON callbacks (next_attempt_at) WHERE state = 'pending';
CREATE INDEX callbacks_request ON callbacks (request_id, id);

-- +goose Down
DELETE FROM callbacks WHERE event = 'request.approved';
CREATE TABLE callbacks_old (
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
INSERT INTO callbacks_old SELECT id, delivery_id, request_id, agent, event, state, attempts, next_attempt_at,
    give_up_at, last_status, last_error, created_at, delivered_at FROM callbacks;
DROP TABLE callbacks;
ALTER TABLE callbacks_old RENAME TO callbacks;
CREATE INDEX callbacks_due ON callbacks (next_attempt_at) WHERE state = 'pending';
CREATE INDEX callbacks_request ON callbacks (request_id, id);
