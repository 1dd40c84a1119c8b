-- +goose Up

-- Standing grants: a reviewer's approval that also approves, until it ends,
-- the same agent's later writes with the same tool whose matched effect
-- fields equal the approved effect's and whose amount, when the tool names
-- one, is at most the approved amount. The request it came from is kept by
-- id only: retention may prune that request, never the grant's record of
-- it.
CREATE TABLE grants (
    id             text        PRIMARY KEY,
    tool           text        NOT NULL,
    agent          text        NOT NULL,
    grantor        text        NOT NULL,
    request_id     uuid        NOT NULL,
    round          integer     NOT NULL,
    -- field path -> the approved effect's value there
    match          jsonb       NOT NULL,
    amount_field   text        NOT NULL DEFAULT '',
    -- exact decimal text; NULL: no ceiling
    amount_ceiling text,
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL CHECK (expires_at > created_at),
    revoked_at     timestamptz,
    revoked_by     text        NOT NULL DEFAULT '',
    CHECK (amount_ceiling IS NULL OR amount_field <> '')
);

-- Intake reads the live grants of one tool and agent.
CREATE INDEX grants_live ON grants (tool, agent, expires_at) WHERE revoked_at IS NULL;
-- Listings are newest first, by grantor or all.
CREATE INDEX grants_by_grantor ON grants (grantor, created_at DESC);
CREATE INDEX grants_by_created ON grants (created_at DESC);

-- +goose Down
DROP TABLE grants;
