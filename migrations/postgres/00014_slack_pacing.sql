-- +goose Up

-- The per-channel Slack budget, shared by every replica: the earliest time
-- the next post to a channel may go, and the end of a pause a 429's
-- Retry-After asked for. A replica takes a post slot with one atomic
-- upsert (take_post_slot), so replicas together keep Slack's pace.
CREATE TABLE slack_pacing (
    channel      text PRIMARY KEY,
    next_post_at timestamptz NOT NULL DEFAULT now(),
    paused_until timestamptz
);

-- +goose Down
DROP TABLE slack_pacing;
