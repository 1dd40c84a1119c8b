-- +goose Up

-- Tamper evidence: each request's audit events form a hash chain (see
-- store.AuditEvent). seq counts a request's events from 1, prev_hash is the
-- hash of the one before, hash is countersign_event_hash of the event. The
-- trigger below computes them as the event is inserted, in its
-- transaction, and sets at to the transaction's time: whoever inserts an
-- event (the runtime role included) can neither backdate it nor place it
-- anywhere but at the end of its request's chain.
ALTER TABLE events ADD COLUMN seq integer, ADD COLUMN prev_hash text, ADD COLUMN hash text;

-- +goose StatementBegin
CREATE FUNCTION countersign_event_hash(prev_hash text, id bigint, request_id uuid, seq integer,
	at timestamptz, actor text, kind text, data jsonb) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT encode(sha256(convert_to(concat_ws(E'\n', prev_hash, id::text, request_id::text, seq::text,
	(extract(epoch FROM at) * 1000000)::bigint::text, actor, kind, data::text), 'UTF8')), 'hex')
$$;
-- +goose StatementEnd

-- The advisory lock takes a request's events one transaction at a time, so
-- two never chain to the same event; the lookup that follows runs after
-- it, with a snapshot of its own (a volatile function's), and sees the
-- event the last holder committed.
-- +goose StatementBegin
CREATE FUNCTION countersign_event_chain() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    last record;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(NEW.request_id::text, 20));
    SELECT e.seq, e.hash INTO last FROM events e
    WHERE e.request_id = NEW.request_id ORDER BY e.seq DESC LIMIT 1;
    NEW.at := now();
    NEW.seq := coalesce(last.seq, 0) + 1;
    NEW.prev_hash := coalesce(last.hash, '');
    NEW.hash := countersign_event_hash(NEW.prev_hash, NEW.id, NEW.request_id, NEW.seq, NEW.at, NEW.actor, NEW.kind, NEW.data);
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- The events already there are chained in the order they were written.
ALTER TABLE events DISABLE TRIGGER events_no_update_delete;
WITH ordered AS (
    SELECT id, row_number() OVER (PARTITION BY request_id ORDER BY id)::integer AS seq FROM events
)
UPDATE events SET seq = ordered.seq FROM ordered WHERE events.id = ordered.id;
-- +goose StatementBegin
DO $$
DECLARE
    e record;
    prev text := '';
    prev_request uuid;
BEGIN
    FOR e IN SELECT * FROM events ORDER BY request_id, seq LOOP
        IF prev_request IS DISTINCT FROM e.request_id THEN
            prev := '';
            prev_request := e.request_id;
        END IF;
        UPDATE events SET prev_hash = prev,
            hash = countersign_event_hash(prev, e.id, e.request_id, e.seq, e.at, e.actor, e.kind, e.data)
        WHERE id = e.id RETURNING hash INTO prev;
    END LOOP;
END;
$$;
-- +goose StatementEnd
ALTER TABLE events ENABLE TRIGGER events_no_update_delete;

ALTER TABLE events ALTER COLUMN seq SET NOT NULL, ALTER COLUMN prev_hash SET NOT NULL, ALTER COLUMN hash SET NOT NULL;
-- The chain's order, and the trigger's lookup of a request's last event.
CREATE UNIQUE INDEX events_chain ON events (request_id, seq);
CREATE TRIGGER events_chain BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION countersign_event_chain();

-- +goose Down
DROP TRIGGER events_chain ON events;
DROP INDEX events_chain;
ALTER TABLE events DROP COLUMN seq, DROP COLUMN prev_hash, DROP COLUMN hash;
DROP FUNCTION countersign_event_chain, countersign_event_hash;
