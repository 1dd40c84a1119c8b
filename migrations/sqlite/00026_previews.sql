-- +goose Up

-- What a request's write changes (see PostgreSQL's migration of the same
-- number); times are microseconds since the epoch, as elsewhere. The
-- comparison by business id reads the effect_strings table's primary key.
CREATE TABLE previews (
    request_id  TEXT    PRIMARY KEY REFERENCES requests (id) ON DELETE CASCADE,
    state       TEXT    NOT NULL CHECK (state IN ('fetching', 'ready', 'failed')),
    changes     TEXT,
    summary     TEXT    NOT NULL DEFAULT '',
    reason      TEXT    NOT NULL DEFAULT '',
    started_at  INTEGER NOT NULL,
    finished_at INTEGER
);

-- +goose Down
DROP TABLE previews;
