-- +goose Up

-- Each request's audit chain head (its last event's seq and hash) is kept
-- on the request's row. The chain's trigger (00012, 00017) took an
-- advisory lock on the request and then looked its last event up in the
-- index of every monthly partition of events, since the partitions are by
-- time and the lookup is by request: a cost that grew with the retention
-- window. It now locks the request's row, reads the head by primary key
-- and updates it in place. Neither column is indexed, so on a page with
-- room (fillfactor 85, 00015) the update is HOT and writes no index entry;
-- the row's lock takes a request's events one transaction at a time as the
-- advisory lock did. The hashes are computed exactly as before.
--
-- A row stored before this migration has no head (NULL) and a new one
-- starts at 0 and '': the columns are added without a default, so no
-- existing row is rewritten, and the default is set afterwards. The first
-- event of an older request finds its head the way the trigger did before
-- (under the same advisory lock, so a trigger of the older build still
-- running during an upgrade keeps to its turn) and stores it. An event of
-- a request whose row is gone (pruned) chains the old way too.
--
-- The runtime role may update a request's row, and so its head; a head
-- set to anything but its last event's seq and hash breaks the chain
-- where the next event is written, which audit verify reports, as it
-- would any event chained to the wrong one.
ALTER TABLE requests ADD COLUMN chain_seq integer, ADD COLUMN chain_hash text;
ALTER TABLE requests ALTER COLUMN chain_seq SET DEFAULT 0, ALTER COLUMN chain_hash SET DEFAULT '';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION countersign_event_chain() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    head record;
    on_row boolean;
BEGIN
    SELECT r.chain_seq AS seq, r.chain_hash AS hash INTO head FROM requests r
    WHERE r.id = NEW.request_id FOR NO KEY UPDATE;
    on_row := FOUND;
    IF NOT on_row OR head.seq IS NULL THEN
        PERFORM pg_advisory_xact_lock(hashtextextended(NEW.request_id::text, 20));
        SELECT l.seq, l.hash INTO head FROM (
            (SELECT e.seq, e.hash FROM events e
             WHERE e.request_id = NEW.request_id ORDER BY e.seq DESC LIMIT 1)
            UNION ALL
            (SELECT h.seq, h.hash FROM audit_checkpoint_heads h
             WHERE h.request_id = NEW.request_id ORDER BY h.seq DESC LIMIT 1)
        ) l LIMIT 1;
    END IF;
    NEW.at := now();
    NEW.seq := coalesce(head.seq, 0) + 1;
    NEW.prev_hash := coalesce(head.hash, '');
    NEW.hash := countersign_event_hash(NEW.prev_hash, NEW.id, NEW.request_id, NEW.seq, NEW.at, NEW.actor, NEW.kind, NEW.data);
    IF on_row THEN
        UPDATE requests SET chain_seq = NEW.seq, chain_hash = NEW.hash WHERE id = NEW.request_id;
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION countersign_event_chain() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    last record;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(NEW.request_id::text, 20));
    SELECT l.seq, l.hash INTO last FROM (
        (SELECT e.seq, e.hash FROM events e
         WHERE e.request_id = NEW.request_id ORDER BY e.seq DESC LIMIT 1)
        UNION ALL
        (SELECT h.seq, h.hash FROM audit_checkpoint_heads h
         WHERE h.request_id = NEW.request_id ORDER BY h.seq DESC LIMIT 1)
    ) l LIMIT 1;
    NEW.at := now();
    NEW.seq := coalesce(last.seq, 0) + 1;
    NEW.prev_hash := coalesce(last.hash, '');
    NEW.hash := countersign_event_hash(NEW.prev_hash, NEW.id, NEW.request_id, NEW.seq, NEW.at, NEW.actor, NEW.kind, NEW.data);
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
ALTER TABLE requests DROP COLUMN chain_seq, DROP COLUMN chain_hash;
