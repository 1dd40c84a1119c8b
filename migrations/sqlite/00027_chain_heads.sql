-- +goose Up

-- PostgreSQL's migration of this number moves each request's audit chain
-- head into a table of its own. The embedded store's chain is written by
-- the store itself in its one writer's transactions and keeps its own way:
-- nothing changes here.
SELECT 1;

-- +goose Down
SELECT 1;
