-- +goose Up

-- A request's review policy, frozen at intake (see the PostgreSQL migration
-- of the same number): rows stored before need one approval from the tool's
-- approvers as configured.
ALTER TABLE requests ADD COLUMN policy TEXT NOT NULL DEFAULT '{"approvals":1}';

-- The reason a reviewer gave with the deciding vote.
ALTER TABLE decisions ADD COLUMN reason TEXT NOT NULL DEFAULT '';

-- votes: one per reviewer per request round; the decision is written once,
-- by the vote that meets the round's policy (or the first eligible reject).
CREATE TABLE votes (
    id                INTEGER PRIMARY KEY,
    request_id        TEXT    NOT NULL REFERENCES requests (id),
    round             INTEGER NOT NULL,
    voter             TEXT    NOT NULL,
    verdict           TEXT    NOT NULL CHECK (verdict IN ('approve', 'reject')),
    reason            TEXT    NOT NULL DEFAULT '',
    via               TEXT    NOT NULL,
    payload_hash_seen TEXT    NOT NULL,
    voted_at          INTEGER NOT NULL,
    UNIQUE (request_id, round, voter)
);

-- A vote is a change an agent can see: it bumps the request's version.
-- +goose StatementBegin
CREATE TRIGGER votes_cast AFTER INSERT ON votes
BEGIN
    UPDATE requests SET version = version + 1 WHERE id = NEW.request_id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER votes_cast;
DROP TABLE votes;
ALTER TABLE decisions DROP COLUMN reason;
ALTER TABLE requests DROP COLUMN policy;
