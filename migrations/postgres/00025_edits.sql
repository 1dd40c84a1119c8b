-- +goose Up

-- Approve with edit: an approver's edited write becomes a new request that
-- supersedes the original, and the original settles as edited. Each names
-- the other by key (a key outlives its request as a tombstone; an id does
-- not). Both stay NULL on every request that was not edited.
ALTER TABLE requests DROP CONSTRAINT requests_status_check;
ALTER TABLE requests ADD CONSTRAINT requests_status_check
    CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'cancelled', 'edited'));
ALTER TABLE requests ADD COLUMN supersedes text COLLATE "C", ADD COLUMN superseded_by text COLLATE "C";

-- The original's agent is told it was edited, and by what.
ALTER TABLE callbacks DROP CONSTRAINT callbacks_event_check;
ALTER TABLE callbacks ADD CONSTRAINT callbacks_event_check
    CHECK (event IN ('request.settled', 'request.needs_review', 'request.approved', 'request.edited'));

-- +goose Down
DELETE FROM callbacks WHERE event = 'request.edited';
ALTER TABLE callbacks DROP CONSTRAINT callbacks_event_check;
ALTER TABLE callbacks ADD CONSTRAINT callbacks_event_check
    CHECK (event IN ('request.settled', 'request.needs_review', 'request.approved'));
UPDATE requests SET status = 'cancelled' WHERE status = 'edited';
ALTER TABLE requests DROP COLUMN superseded_by, DROP COLUMN supersedes;
ALTER TABLE requests DROP CONSTRAINT requests_status_check;
ALTER TABLE requests ADD CONSTRAINT requests_status_check
    CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'cancelled'));
