-- +goose Up

-- A restored ledger (pg_restore, PITR, or a copy of the embedded store put
-- back) remembers less than the providers do: a write performed after the
-- backup is, in the copy, still ready, or its request still pending, and
-- would be sent again. `countersign restore` records each restore here and
-- flags every execution that was unsettled at that moment; an execution
-- created later for a request created before guard_until (the requests in
-- the copy, and those agents replay within the window after the restore)
-- is flagged as it is inserted. The executor asks the provider before a
-- flagged execution's first send (docs/OPERATIONS.md, "Restores").
CREATE TABLE restores (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    restored_at timestamptz NOT NULL,
    guard_until timestamptz NOT NULL CHECK (guard_until >= restored_at),
    source      text        NOT NULL,
    -- How many unsettled executions the restore flagged.
    flagged     integer     NOT NULL CHECK (flagged >= 0)
);

-- A constant default: no table rewrite.
ALTER TABLE executions ADD COLUMN verify_first boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE executions DROP COLUMN verify_first;
DROP TABLE restores;
