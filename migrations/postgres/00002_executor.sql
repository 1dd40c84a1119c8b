-- +goose Up

-- The reconciler counts executions waiting for a human on every pass (a
-- gauge), and support lists them; neither should scan the table.
CREATE INDEX executions_needs_review ON executions (updated_at) WHERE state = 'needs_review';

-- +goose Down
DROP INDEX executions_needs_review;
