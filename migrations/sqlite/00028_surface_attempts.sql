-- +goose Up

-- Failed attempts at something a surface hands out (see PostgreSQL's
-- migration of the same number); times are microseconds since the epoch.
CREATE TABLE surface_attempts (
    surface    TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    attempts   INTEGER NOT NULL CHECK (attempts > 0),
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (surface, key)
);
CREATE INDEX surface_attempts_expiry ON surface_attempts (expires_at);

-- +goose Down
DROP TABLE surface_attempts;
