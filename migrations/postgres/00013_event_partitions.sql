-- +goose Up

-- The audit trail leaves only by whole months: events becomes partitioned by
-- month on at, one partition a month (events_YYYYMM, in UTC) and a default
-- partition for anything outside them. Rows are never deleted one by one;
-- the retention sweep drops a month once it is older than retention.audit,
-- through countersign_drop_event_partitions, which records a checkpoint so
-- the chains that remain still verify.
ALTER TABLE events RENAME TO events_unpartitioned;
ALTER INDEX events_pkey RENAME TO events_unpartitioned_pkey;
ALTER INDEX events_request RENAME TO events_unpartitioned_request;
ALTER INDEX events_chain RENAME TO events_unpartitioned_chain;

CREATE TABLE events (
    id         bigint      NOT NULL DEFAULT nextval('events_id_seq'),
    request_id uuid        NOT NULL,
    at         timestamptz NOT NULL DEFAULT now(),
    actor      text        NOT NULL,
    kind       text        NOT NULL,
    data       jsonb       NOT NULL DEFAULT '{}',
    seq        integer     NOT NULL,
    prev_hash  text        NOT NULL,
    hash       text        NOT NULL,
    -- A partitioned table's unique keys hold its partition key.
    PRIMARY KEY (id, at)
) PARTITION BY RANGE (at);
ALTER SEQUENCE events_id_seq OWNED BY events.id;
CREATE TABLE events_default PARTITION OF events DEFAULT;
CREATE INDEX events_request ON events (request_id, id);
-- The chain's order and the chain trigger's lookup of a request's last
-- event. Not unique: a unique index of a partitioned table must hold at;
-- the trigger's lock keeps a request's numbers apart, and audit verify
-- names any number given twice.
CREATE INDEX events_chain ON events (request_id, seq);

CREATE TRIGGER events_no_update_delete BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events_default
    FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();
CREATE TRIGGER events_chain BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION countersign_event_chain();

-- countersign_event_partition creates the partition of the month starting
-- at month (UTC) unless it exists, and returns whether it did. A month the
-- default partition already holds rows of is left there: attaching it would
-- mean moving them, which only the migrations do.
-- +goose StatementBegin
CREATE FUNCTION countersign_event_partition(month timestamptz) RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    name text := 'events_' || to_char(month AT TIME ZONE 'UTC', 'YYYYMM');
    upto timestamptz := ((month AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
BEGIN
    IF to_regclass(name) IS NOT NULL
        OR EXISTS (SELECT 1 FROM events_default WHERE at >= month AND at < upto) THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%L) TO (%L)', name, month, upto);
    EXECUTE format('CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON %I '
        'FOR EACH STATEMENT EXECUTE FUNCTION events_append_only()', name);
    RETURN true;
END;
$$;
-- +goose StatementEnd

-- countersign_event_partitions_ahead creates this month's partition and the
-- next months' (UTC) that do not exist, and returns how many it created.
-- It runs as its owner (the schema's), so the runtime role may call it; it
-- only ever creates partitions of events, for now and the future.
-- +goose StatementBegin
CREATE FUNCTION countersign_event_partitions_ahead(months integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    this timestamptz := date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    created integer := 0;
BEGIN
    FOR i IN 0 .. least(greatest(months, 0), 24) LOOP
        IF countersign_event_partition(((this AT TIME ZONE 'UTC') + i * interval '1 month') AT TIME ZONE 'UTC') THEN
            created := created + 1;
        END IF;
    END LOOP;
    RETURN created;
END;
$$;
-- +goose StatementEnd

-- The events already there move into the partitions of their months.
-- +goose StatementBegin
DO $$
DECLARE
    m timestamptz;
BEGIN
    FOR m IN SELECT DISTINCT date_trunc('month', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' FROM events_unpartitioned LOOP
        PERFORM countersign_event_partition(m);
    END LOOP;
END;
$$;
-- +goose StatementEnd
SELECT countersign_event_partitions_ahead(2);
-- The rows are copied as they are: the chain trigger would number and time
-- them again.
ALTER TABLE events DISABLE TRIGGER events_chain;
INSERT INTO events (id, request_id, at, actor, kind, data, seq, prev_hash, hash)
SELECT id, request_id, at, actor, kind, data, seq, prev_hash, hash FROM events_unpartitioned;
ALTER TABLE events ENABLE TRIGGER events_chain;
DROP TABLE events_unpartitioned;

-- Checkpoints: what a dropped partition held, so the chains that remain
-- still verify (store.AuditCheckpoint). A checkpoint chains to the one
-- before it as events do; its heads are the last event of each request
-- chain it cut, where that request's remaining events continue.
CREATE TABLE audit_checkpoints (
    id         bigserial   PRIMARY KEY,
    partition  text        NOT NULL,
    range_from timestamptz NOT NULL,
    range_to   timestamptz NOT NULL,
    events     bigint      NOT NULL,
    -- digest is the SHA-256 of the dropped events' hashes, one a line, in
    -- the chains' order (request id, seq).
    digest     text        NOT NULL,
    dropped_by text        NOT NULL,
    dropped_at timestamptz NOT NULL,
    prev_hash  text        NOT NULL,
    hash       text        NOT NULL
);
CREATE TABLE audit_checkpoint_heads (
    -- Deferred: the heads are read from the partition before the
    -- checkpoint's hash, which covers them, can be computed.
    checkpoint_id bigint  NOT NULL REFERENCES audit_checkpoints (id) DEFERRABLE INITIALLY DEFERRED,
    request_id    uuid    NOT NULL,
    seq           integer NOT NULL,
    hash          text    NOT NULL,
    PRIMARY KEY (checkpoint_id, request_id)
);
CREATE INDEX audit_checkpoint_heads_request ON audit_checkpoint_heads (request_id, seq);

-- +goose StatementBegin
CREATE FUNCTION countersign_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_checkpoints_no_update_delete BEFORE UPDATE OR DELETE ON audit_checkpoints
    FOR EACH ROW EXECUTE FUNCTION countersign_append_only();
CREATE TRIGGER audit_checkpoints_no_truncate BEFORE TRUNCATE ON audit_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();
CREATE TRIGGER audit_checkpoint_heads_no_update_delete BEFORE UPDATE OR DELETE ON audit_checkpoint_heads
    FOR EACH ROW EXECUTE FUNCTION countersign_append_only();
CREATE TRIGGER audit_checkpoint_heads_no_truncate BEFORE TRUNCATE ON audit_checkpoint_heads
    FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();

-- The least the database keeps, whatever retention.audit the runtime role
-- asks for: countersign_drop_event_partitions drops nothing newer. Only
-- the schema's owner changes it (UPDATE audit_floor SET keep = '7 years').
CREATE TABLE audit_floor (
    only_row boolean  PRIMARY KEY DEFAULT true CHECK (only_row),
    keep     interval NOT NULL CHECK (keep >= interval '0')
);
INSERT INTO audit_floor (keep) VALUES (interval '31 days');

-- countersign_checkpoint_hash chains a checkpoint to the one before it:
-- the hex SHA-256 of its previous hash, id, partition, range (microseconds
-- since the epoch), event count, digest, heads digest, who and when, one a
-- line (store.CheckpointHash computes the same).
-- A request whose events all left with their months chains on from its
-- newest checkpoint head, not from the start again.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION countersign_event_chain() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    last record;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(NEW.request_id::text, 20));
    SELECT e.seq, e.hash INTO last FROM events e
    WHERE e.request_id = NEW.request_id ORDER BY e.seq DESC LIMIT 1;
    IF NOT FOUND THEN
        SELECT h.seq, h.hash INTO last FROM audit_checkpoint_heads h
        WHERE h.request_id = NEW.request_id ORDER BY h.seq DESC LIMIT 1;
    END IF;
    NEW.at := now();
    NEW.seq := coalesce(last.seq, 0) + 1;
    NEW.prev_hash := coalesce(last.hash, '');
    NEW.hash := countersign_event_hash(NEW.prev_hash, NEW.id, NEW.request_id, NEW.seq, NEW.at, NEW.actor, NEW.kind, NEW.data);
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION countersign_checkpoint_hash(prev_hash text, id bigint, partition text, range_from timestamptz,
	range_to timestamptz, events bigint, digest text, heads text, dropped_by text, dropped_at timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT encode(sha256(convert_to(concat_ws(E'\n', prev_hash, id::text, partition,
	(extract(epoch FROM range_from) * 1000000)::bigint::text, (extract(epoch FROM range_to) * 1000000)::bigint::text,
	events::text, digest, heads, dropped_by, (extract(epoch FROM dropped_at) * 1000000)::bigint::text), 'UTF8')), 'hex')
$$;
-- +goose StatementEnd

-- countersign_drop_event_partitions drops the oldest monthly partition of
-- events whose month ended before both before and now() less audit_floor's
-- keep, after recording its checkpoint, and returns how many it dropped (0
-- or 1; the sweep calls it again until 0). It runs as its owner (the schema's), so the runtime role may
-- call it; it drops nothing but whole past months of events, and leaves the
-- record of each.
-- +goose StatementBegin
CREATE FUNCTION countersign_drop_event_partitions(before timestamptz) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    bound timestamptz := least(before, now() - (SELECT keep FROM audit_floor));
    p record;
    cp audit_checkpoints;
    last audit_checkpoints;
    heads text;
    dropped integer := 0;
BEGIN
    -- One sweep at a time, so checkpoints chain in order.
    PERFORM pg_advisory_xact_lock(hashtextextended('countersign_drop_event_partitions', 20));
    FOR p IN
        SELECT c.relname AS name, to_date(substr(c.relname, 8), 'YYYYMM')::timestamp AS from_local
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'events'::regclass AND c.relname ~ '^events_[0-9]{6}$'
        ORDER BY c.relname
    LOOP
        cp.range_from := p.from_local AT TIME ZONE 'UTC';
        cp.range_to := (p.from_local + interval '1 month') AT TIME ZONE 'UTC';
        EXIT WHEN cp.range_to > bound;
        cp.partition := p.name;
        EXECUTE format('SELECT count(*), encode(sha256(convert_to(coalesce(string_agg(hash, E''\n'' ORDER BY request_id, seq), ''''), ''UTF8'')), ''hex'') FROM %I', p.name)
            INTO cp.events, cp.digest;
        SELECT * INTO last FROM audit_checkpoints ORDER BY id DESC LIMIT 1;
        cp.id := nextval('audit_checkpoints_id_seq');
        cp.prev_hash := coalesce(last.hash, '');
        cp.dropped_by := session_user;
        cp.dropped_at := now();
        EXECUTE format('INSERT INTO audit_checkpoint_heads (checkpoint_id, request_id, seq, hash) '
            'SELECT DISTINCT ON (request_id) $1, request_id, seq, hash FROM %I ORDER BY request_id, seq DESC', p.name)
            USING cp.id;
        SELECT coalesce(string_agg(request_id::text || ' ' || seq::text || ' ' || hash, E'\n' ORDER BY request_id), '')
            INTO heads FROM audit_checkpoint_heads WHERE checkpoint_id = cp.id;
        cp.hash := countersign_checkpoint_hash(cp.prev_hash, cp.id, cp.partition, cp.range_from, cp.range_to,
            cp.events, cp.digest, encode(sha256(convert_to(heads, 'UTF8')), 'hex'), cp.dropped_by, cp.dropped_at);
        INSERT INTO audit_checkpoints SELECT cp.*;
        EXECUTE format('DROP TABLE %I', p.name);
        dropped := dropped + 1;
        -- One month a call: the DROP locks events until the commit, so no
        -- second month's digest is read while intake waits on it.
        EXIT;
    END LOOP;
    RETURN dropped;
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
DROP FUNCTION countersign_drop_event_partitions, countersign_checkpoint_hash, countersign_event_partitions_ahead;
DROP TABLE audit_floor, audit_checkpoint_heads, audit_checkpoints;
DROP FUNCTION countersign_append_only;
ALTER TABLE events RENAME TO events_partitioned;
ALTER INDEX events_request RENAME TO events_partitioned_request;
ALTER INDEX events_chain RENAME TO events_partitioned_chain;
CREATE TABLE events (
    id         bigint      PRIMARY KEY DEFAULT nextval('events_id_seq'),
    request_id uuid        NOT NULL,
    at         timestamptz NOT NULL DEFAULT now(),
    actor      text        NOT NULL,
    kind       text        NOT NULL,
    data       jsonb       NOT NULL DEFAULT '{}',
    seq        integer     NOT NULL,
    prev_hash  text        NOT NULL,
    hash       text        NOT NULL
);
ALTER SEQUENCE events_id_seq OWNED BY events.id;
INSERT INTO events SELECT id, request_id, at, actor, kind, data, seq, prev_hash, hash FROM events_partitioned;
DROP TABLE events_partitioned;
DROP FUNCTION countersign_event_partition;
CREATE INDEX events_request ON events (request_id, id);
CREATE UNIQUE INDEX events_chain ON events (request_id, seq);
CREATE TRIGGER events_no_update_delete BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();
CREATE TRIGGER events_chain BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION countersign_event_chain();
