-- +goose NO TRANSACTION
-- +goose Up

-- GET /v1/requests lists requests newest first, by keyset: (created_at, id),
-- both descending. Every index here ends in that order, so a page reads its
-- own rows and no more, however deep in a listing it is: an agent's
-- requests, by status, by tool and status (the tool index serves a tool
-- alone too: the planner reads its rows and sorts them, or reads the
-- agent's index in order and filters), a run's, and every agent's (for
-- admins). settled = false reads the pending rows of the status index and
-- the approved rows whose execution is in flight (executions_one_live), not
-- the agent's settled history.
--
-- They are built CONCURRENTLY, so intake keeps writing while a large table
-- is indexed. Such a build cannot run in a transaction, and one that fails
-- leaves an invalid index behind: each is dropped first, so a migration that
-- failed half-way simply runs again.
DROP INDEX CONCURRENTLY IF EXISTS requests_by_agent;
CREATE INDEX CONCURRENTLY requests_by_agent ON requests (requested_by, created_at DESC, id DESC);
DROP INDEX CONCURRENTLY IF EXISTS requests_by_agent_status;
CREATE INDEX CONCURRENTLY requests_by_agent_status ON requests (requested_by, status, created_at DESC, id DESC);
DROP INDEX CONCURRENTLY IF EXISTS requests_by_agent_tool;
CREATE INDEX CONCURRENTLY requests_by_agent_tool ON requests (requested_by, tool, status, created_at DESC, id DESC);
DROP INDEX CONCURRENTLY IF EXISTS requests_by_run;
CREATE INDEX CONCURRENTLY requests_by_run ON requests (run_id, created_at DESC, id DESC);
DROP INDEX CONCURRENTLY IF EXISTS requests_newest;
CREATE INDEX CONCURRENTLY requests_newest ON requests (created_at DESC, id DESC);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS requests_newest;
DROP INDEX CONCURRENTLY IF EXISTS requests_by_run;
DROP INDEX CONCURRENTLY IF EXISTS requests_by_agent_tool;
DROP INDEX CONCURRENTLY IF EXISTS requests_by_agent_status;
DROP INDEX CONCURRENTLY IF EXISTS requests_by_agent;
