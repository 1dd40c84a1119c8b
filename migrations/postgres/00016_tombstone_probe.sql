-- +goose Up

-- The check that refuses an insert of a key pruned meanwhile (00011) joined
-- the inserted rows to every tombstone. The plan a session kept for it was
-- made while the table of tombstones was small, and read it whole for every
-- batch of intake once a sweep had filled it (intake p99 past a second
-- beside a sweep of 1,000,000 requests). It now looks each inserted key up
-- in the tombstones' primary key, which no table size changes.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION countersign_key_not_pruned() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    k text COLLATE "C";
BEGIN
    FOR k IN SELECT key FROM inserted LOOP
        IF EXISTS (SELECT 1 FROM tombstones t WHERE t.key = k) THEN
            RAISE EXCEPTION 'a key being inserted was pruned meanwhile'
                USING ERRCODE = 'unique_violation';
        END IF;
    END LOOP;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION countersign_key_not_pruned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM inserted i JOIN tombstones t ON t.key = i.key) THEN
        RAISE EXCEPTION 'a key being inserted was pruned meanwhile'
            USING ERRCODE = 'unique_violation';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
