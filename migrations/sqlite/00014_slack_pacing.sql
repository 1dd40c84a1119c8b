-- +goose Up

-- The per-channel Slack budget (see PostgreSQL's migration of the same
-- number); times are microseconds since the epoch, as elsewhere.
CREATE TABLE slack_pacing (
    channel      TEXT PRIMARY KEY,
    next_post_at INTEGER NOT NULL,
    paused_until INTEGER
);

-- +goose Down
DROP TABLE slack_pacing;
