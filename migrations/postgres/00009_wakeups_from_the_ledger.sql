-- +goose Up

-- Wake-ups are the ledger's to decide: store.Ledger hands each transition's
-- to the driver, which sends them with pg_notify in the transition's own
-- statement or transaction. The triggers that sent them from here go; the
-- vote trigger keeps its version bump.
DROP TRIGGER IF EXISTS requests_notify ON requests;
DROP TRIGGER IF EXISTS executions_notify ON executions;
DROP FUNCTION IF EXISTS notify_request_change, notify_execution_change;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION countersign_vote_cast() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE requests SET version = version + 1 WHERE id = NEW.request_id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION countersign_vote_cast() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE requests SET version = version + 1 WHERE id = NEW.request_id;
    PERFORM pg_notify('countersign_change', NEW.request_id::text);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION notify_request_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('countersign_change', NEW.id::text);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION notify_execution_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('countersign_change', NEW.request_id::text);
    IF NEW.state = 'ready' THEN
        PERFORM pg_notify('countersign_ready', '');
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER requests_notify AFTER UPDATE OF status, round ON requests
    FOR EACH ROW EXECUTE FUNCTION notify_request_change();
CREATE TRIGGER executions_notify AFTER INSERT OR UPDATE OF state ON executions
    FOR EACH ROW EXECUTE FUNCTION notify_execution_change();
