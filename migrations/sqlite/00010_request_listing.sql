-- +goose Up

-- GET /v1/requests lists requests newest first, by keyset: (created_at, id),
-- both descending. The embedded store serves one machine, usually one
-- agent: it reads the agent's requests (or everyone's, for an admin) in
-- that order and filters them, rather than keeping PostgreSQL's index per
-- filter.
CREATE INDEX requests_by_agent ON requests (requested_by, created_at DESC, id DESC);
CREATE INDEX requests_newest ON requests (created_at DESC, id DESC);

-- +goose Down
DROP INDEX requests_newest;
DROP INDEX requests_by_agent;
