-- +goose Up

-- Restores and the executions that verify before their first send (see
-- PostgreSQL's migration of the same number); times are microseconds since
-- the epoch, as elsewhere.
CREATE TABLE restores (
    id          INTEGER PRIMARY KEY,
    restored_at INTEGER NOT NULL,
    guard_until INTEGER NOT NULL CHECK (guard_until >= restored_at),
    source      TEXT    NOT NULL,
    flagged     INTEGER NOT NULL CHECK (flagged >= 0)
);

ALTER TABLE executions ADD COLUMN verify_first INTEGER NOT NULL DEFAULT 0 CHECK (verify_first IN (0, 1));

-- +goose Down
ALTER TABLE executions DROP COLUMN verify_first;
DROP TABLE restores;
