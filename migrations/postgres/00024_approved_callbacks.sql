-- +goose Up

-- An agent-executed write's approval is news its agent acts on (it performs
-- the write with the receipt), so it is called back as request.approved.
ALTER TABLE callbacks DROP CONSTRAINT callbacks_event_check;
ALTER TABLE callbacks ADD CONSTRAINT callbacks_event_check
    CHECK (event IN ('request.settled', 'request.needs_review', 'request.approved'));

-- +goose Down
DELETE FROM callbacks WHERE event = 'request.approved';
ALTER TABLE callbacks DROP CONSTRAINT callbacks_event_check;
ALTER TABLE callbacks ADD CONSTRAINT callbacks_event_check
    CHECK (event IN ('request.settled', 'request.needs_review'));
