-- +goose Up

-- round_started_at is when the request's current round began pending, set
-- when an approval is superseded and the request re-opened; NULL for round 1,
-- which began at created_at. Reminders and escalations count from it.
ALTER TABLE requests ADD COLUMN round_started_at INTEGER;

-- A reminder or an escalation is a thread reply whose data names it
-- ({"nudge": "reminder"}): at most one of each per request round.
CREATE UNIQUE INDEX outbox_nudge_once ON outbox (request_id, round, json_extract(data, '$.nudge'))
    WHERE json_extract(data, '$.nudge') IS NOT NULL;

-- +goose Down
DROP INDEX outbox_nudge_once;
ALTER TABLE requests DROP COLUMN round_started_at;
