-- +goose Up

-- A request's review policy, resolved from its tool (and the first matching
-- tier) at intake and frozen: a later change of configuration does not move a
-- pending request. Rows stored before policies existed need one approval,
-- from the tool's approvers as configured when the vote is cast (approvers
-- absent), which is how they were reviewed before.
ALTER TABLE requests ADD COLUMN policy jsonb NOT NULL DEFAULT '{"approvals": 1}';

-- The reason a reviewer gave with the deciding vote (a reject's, mostly).
ALTER TABLE decisions ADD COLUMN reason text NOT NULL DEFAULT '';

-- votes: one per reviewer per request round. Approvals accumulate here until
-- the round's policy is met; the decision is written once, by the vote that
-- meets it (or by the first eligible reject), under the request's row lock.
CREATE TABLE votes (
    id                bigserial   PRIMARY KEY,
    request_id        uuid        NOT NULL REFERENCES requests (id),
    round             integer     NOT NULL,
    voter             text        NOT NULL,
    verdict           text        NOT NULL CHECK (verdict IN ('approve', 'reject')),
    reason            text        NOT NULL DEFAULT '',
    via               text        NOT NULL,
    payload_hash_seen text        NOT NULL,
    voted_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (request_id, round, voter)
);

-- A vote is a change an agent can see (the representation lists the
-- round's votes): it bumps the request's version and wakes its waiters.
-- +goose StatementBegin
CREATE FUNCTION countersign_vote_cast() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE requests SET version = version + 1 WHERE id = NEW.request_id;
    PERFORM pg_notify('countersign_change', NEW.request_id::text);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER votes_cast AFTER INSERT ON votes
    FOR EACH ROW EXECUTE FUNCTION countersign_vote_cast();

-- +goose Down
DROP TRIGGER votes_cast ON votes;
DROP FUNCTION countersign_vote_cast;
DROP TABLE votes;
ALTER TABLE decisions DROP COLUMN reason;
ALTER TABLE requests DROP COLUMN policy;
