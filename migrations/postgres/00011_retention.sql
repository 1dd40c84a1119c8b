-- +goose Up

-- tombstones: what remains of a pruned request, so its key never runs
-- twice: the key, the basis hash a replay is compared with, the agent it
-- belongs to, its final status (rejected, expired, cancelled, succeeded or
-- failed) and when it settled. Never the effect, the summary or anything
-- else the agent sent: those leave with the retention window.
CREATE TABLE tombstones (
    key        text        COLLATE "C" PRIMARY KEY,
    basis_hash text        NOT NULL,
    agent      text        NOT NULL,
    status     text        NOT NULL,
    settled_at timestamptz NOT NULL,
    pruned_at  timestamptz NOT NULL DEFAULT now()
);

-- The audit trail outlives the requests it tells of: an event keeps its
-- request's id, and no foreign key, so pruning a request neither deletes
-- nor edits an event.
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_request_id_fkey;

-- Intake reads the tombstones before it inserts, but a prune that commits
-- while an insert of the same key waits on the row it deletes would let the
-- insert through. This check runs after the insert, with a snapshot of its
-- own (a volatile function's), so it sees that prune's tombstone and refuses
-- the insert; the intake that retries it finds the key pruned.
-- +goose StatementBegin
CREATE FUNCTION countersign_key_not_pruned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM inserted i JOIN tombstones t ON t.key = i.key) THEN
        RAISE EXCEPTION 'a key being inserted was pruned meanwhile'
            USING ERRCODE = 'unique_violation';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER requests_key_not_pruned AFTER INSERT ON requests
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION countersign_key_not_pruned();

-- +goose Down
DROP TRIGGER requests_key_not_pruned ON requests;
DROP FUNCTION countersign_key_not_pruned;
-- Events of pruned requests name requests that are gone: the key comes
-- back for new rows only.
ALTER TABLE events ADD CONSTRAINT events_request_id_fkey
    FOREIGN KEY (request_id) REFERENCES requests (id) NOT VALID;
DROP TABLE tombstones;
