-- +goose Up

-- Each request's audit chain head (its last event's seq and hash) in a
-- table of its own. The chain's trigger (00012, 00017) took an advisory
-- lock on the request and looked its last event up in the index of every
-- monthly partition of events (the partitions are by time, the lookup by
-- request): a cost that grew with the retention window. It now updates the
-- request's head by primary key in one statement, which computes the new
-- event's hash from the head it locks; a request's first event inserts the
-- head. The row's lock takes a request's events one transaction at a time,
-- as the advisory lock did; a writer waiting on it computes from the
-- version the other committed. The hashes are computed exactly as before.
--
-- Not on the request row (docs/BENCHMARKS.md, issue 38): the executor's
-- batches bump a request's version in the statement that inserts its
-- event, and two updates of one row in one statement leave the page.
-- Here a head is a small row on pages kept half empty (fillfactor 50), so
-- its update is HOT (no index entry written) and requests is untouched.
-- prev_hash is the head's hash before its last update, which the update
-- returns as the new event's prev_hash.
--
-- The head leaves with its request (the retention sweep deletes both).
-- An event of a request without a row (pruned, or never stored) chains
-- the old way, under the advisory lock, and leaves no head behind. The
-- runtime role reads, writes and deletes heads; a head set to anything but
-- its request's last event breaks the chain where the next event is
-- written, which audit verify reports as it would any event chained to the
-- wrong one.
CREATE TABLE chain_heads (
    request_id uuid PRIMARY KEY,
    seq integer NOT NULL,
    hash text NOT NULL,
    prev_hash text NOT NULL
) WITH (fillfactor = 50);

-- The roles that insert events (the runtime role GrantAppRole prepared)
-- write heads from now on, through the trigger: they are granted the table
-- here, so a serve running as one keeps taking events after the upgrade
-- before GrantAppRole runs again (which grants the same, and no more).
-- +goose StatementBegin
DO $$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT DISTINCT a.grantee FROM pg_class c, aclexplode(c.relacl) a
        WHERE c.oid = 'events'::regclass AND a.privilege_type = 'INSERT' AND a.grantee <> c.relowner
    LOOP
        EXECUTE 'GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE chain_heads TO '
            || CASE g.grantee WHEN 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g.grantee)) END;
    END LOOP;
END $$;
-- +goose StatementEnd

-- Every stored request's head, from its last event or, when its events
-- were all dropped with their months, the head a checkpoint kept (whose
-- prev_hash is not kept: '' here, and never read before the head's next
-- update overwrites it). Events are locked against inserts meanwhile, so
-- no chain moves on under the fill.
LOCK TABLE events IN SHARE MODE;
INSERT INTO chain_heads (request_id, seq, hash, prev_hash)
SELECT DISTINCT ON (l.request_id) l.request_id, l.seq, l.hash, l.prev_hash FROM (
    SELECT e.request_id, e.seq, e.hash, e.prev_hash FROM events e
    UNION ALL
    SELECT h.request_id, h.seq, h.hash, '' FROM audit_checkpoint_heads h
) l
WHERE EXISTS (SELECT 1 FROM requests r WHERE r.id = l.request_id)
ORDER BY l.request_id, l.seq DESC;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION countersign_event_chain() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    last_seq integer;
    last_hash text;
BEGIN
    NEW.at := now();
    LOOP
        UPDATE chain_heads h SET seq = h.seq + 1, prev_hash = h.hash,
            hash = countersign_event_hash(h.hash, NEW.id, NEW.request_id, h.seq + 1, NEW.at, NEW.actor, NEW.kind, NEW.data)
        WHERE h.request_id = NEW.request_id
        RETURNING h.seq, h.prev_hash, h.hash INTO NEW.seq, NEW.prev_hash, NEW.hash;
        IF FOUND THEN
            RETURN NEW;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM requests r WHERE r.id = NEW.request_id) THEN
            -- No row: the chain as before 00027, and no head kept.
            PERFORM pg_advisory_xact_lock(hashtextextended(NEW.request_id::text, 20));
            SELECT l.seq, l.hash INTO last_seq, last_hash FROM (
                (SELECT e.seq, e.hash FROM events e
                 WHERE e.request_id = NEW.request_id ORDER BY e.seq DESC LIMIT 1)
                UNION ALL
                (SELECT c.seq, c.hash FROM audit_checkpoint_heads c
                 WHERE c.request_id = NEW.request_id ORDER BY c.seq DESC LIMIT 1)
            ) l LIMIT 1;
            NEW.seq := coalesce(last_seq, 0) + 1;
            NEW.prev_hash := coalesce(last_hash, '');
            NEW.hash := countersign_event_hash(NEW.prev_hash, NEW.id, NEW.request_id, NEW.seq, NEW.at, NEW.actor, NEW.kind, NEW.data);
            RETURN NEW;
        END IF;
        -- The request's first event. A writer that inserted its head
        -- meanwhile holds it until it commits; then this one updates it.
        INSERT INTO chain_heads AS h (request_id, seq, prev_hash, hash)
        VALUES (NEW.request_id, 1, '', countersign_event_hash('', NEW.id, NEW.request_id, 1, NEW.at, NEW.actor, NEW.kind, NEW.data))
        ON CONFLICT (request_id) DO NOTHING
        RETURNING h.seq, h.prev_hash, h.hash INTO NEW.seq, NEW.prev_hash, NEW.hash;
        IF FOUND THEN
            RETURN NEW;
        END IF;
    END LOOP;
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
DROP TABLE chain_heads;
