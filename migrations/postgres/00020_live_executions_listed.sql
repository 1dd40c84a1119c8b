-- +goose Up

-- settled = false lists the approved requests whose execution is live
-- beside the pending ones. It found them by reading every live execution's
-- request and sorting them all (about 2,000 in a ledger in service: 12 to
-- 43 ms a page at 1,000,000 to 10,000,000 requests). Each execution now
-- carries its request's two listing columns, which never change, and the
-- live ones are indexed in listing order, an agent's and everyone's (for
-- admins), so a page reads about a page of them. The columns live here,
-- not an execution's state on requests: an indexed column of requests
-- changed by every claim and outcome would end the HOT updates of its
-- version bumps (00015) and write an entry into each of its indexes.
--
-- Only a live execution needs them, and a settled one never lives again:
-- the executions settled before this keep none. Filling those too
-- rewrote every execution under the lock ADD COLUMN takes, 70 s for
-- 700,000 during which the executor waited; the live ones, about 2,000
-- in a ledger in service, took 2 s.
ALTER TABLE executions ADD COLUMN requested_by text, ADD COLUMN request_created_at timestamptz;
UPDATE executions e SET requested_by = r.requested_by, request_created_at = r.created_at
FROM requests r WHERE r.id = e.request_id AND e.state NOT IN ('succeeded', 'failed', 'superseded');
ALTER TABLE executions ADD CONSTRAINT executions_live_listed
    CHECK (state IN ('succeeded', 'failed', 'superseded') OR requested_by IS NOT NULL AND request_created_at IS NOT NULL);

CREATE INDEX executions_live_by_agent ON executions (requested_by, request_created_at DESC, request_id DESC)
    WHERE state NOT IN ('succeeded', 'failed', 'superseded');
CREATE INDEX executions_live_newest ON executions (request_created_at DESC, request_id DESC)
    WHERE state NOT IN ('succeeded', 'failed', 'superseded');

-- A serve of the version before this one, still running while a rollout
-- replaces it, inserts executions without the columns: they are filled
-- from the request, where the approval would otherwise fail. The current
-- insert fills them itself and never calls this.
-- +goose StatementBegin
CREATE FUNCTION countersign_execution_listed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT r.requested_by, r.created_at INTO NEW.requested_by, NEW.request_created_at
    FROM requests r WHERE r.id = NEW.request_id;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER executions_listed BEFORE INSERT ON executions
    FOR EACH ROW WHEN (NEW.requested_by IS NULL OR NEW.request_created_at IS NULL)
    EXECUTE FUNCTION countersign_execution_listed();

-- +goose Down
DROP TRIGGER executions_listed ON executions;
DROP FUNCTION countersign_execution_listed;
DROP INDEX executions_live_newest;
DROP INDEX executions_live_by_agent;
ALTER TABLE executions DROP CONSTRAINT executions_live_listed;
ALTER TABLE executions DROP COLUMN request_created_at, DROP COLUMN requested_by;
