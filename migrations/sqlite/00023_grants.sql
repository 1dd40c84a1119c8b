-- +goose Up

-- Standing grants (see PostgreSQL's migration of the same number); times
-- are microseconds since the epoch, as elsewhere.
CREATE TABLE grants (
    id             TEXT    PRIMARY KEY,
    tool           TEXT    NOT NULL,
    agent          TEXT    NOT NULL,
    grantor        TEXT    NOT NULL,
    request_id     TEXT    NOT NULL,
    round          INTEGER NOT NULL,
    match          TEXT    NOT NULL,
    amount_field   TEXT    NOT NULL DEFAULT '',
    amount_ceiling TEXT,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL CHECK (expires_at > created_at),
    revoked_at     INTEGER,
    revoked_by     TEXT    NOT NULL DEFAULT '',
    CHECK (amount_ceiling IS NULL OR amount_field <> '')
);

CREATE INDEX grants_live ON grants (tool, agent, expires_at) WHERE revoked_at IS NULL;
CREATE INDEX grants_by_grantor ON grants (grantor, created_at DESC);
CREATE INDEX grants_by_created ON grants (created_at DESC);

-- +goose Down
DROP TABLE grants;
