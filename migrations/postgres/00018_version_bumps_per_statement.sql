-- +goose Up

-- An execution's insert and each visible change of it bump its request's
-- version (00006). The triggers did it row by row: a claim or an outcome
-- batch of 200 executions ran 200 UPDATE statements of one row each, each
-- paying a statement's start and end, about twice what the row's update
-- costs. Once per statement, over the rows it changed, the bumps are one
-- join. Each request still goes up once per execution row inserted or
-- visibly changed, as before.
DROP TRIGGER executions_version_insert ON executions;
DROP TRIGGER executions_version_update ON executions;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION bump_request_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE requests r SET version = r.version + c.n
        FROM (SELECT request_id, count(*) AS n FROM new_rows GROUP BY request_id) c
        WHERE r.id = c.request_id;
    ELSE
        UPDATE requests r SET version = r.version + c.n
        FROM (SELECT n.request_id, count(*) AS n FROM new_rows n JOIN old_rows o ON o.id = n.id
              WHERE (o.state, o.attempts, o.last_code, o.provider_ref, o.response_status, o.response_body)
                  IS DISTINCT FROM (n.state, n.attempts, n.last_code, n.provider_ref, n.response_status, n.response_body)
              GROUP BY n.request_id) c
        WHERE r.id = c.request_id;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER executions_version_insert AFTER INSERT ON executions
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION bump_request_version();
CREATE TRIGGER executions_version_update AFTER UPDATE ON executions
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION bump_request_version();

-- +goose Down
DROP TRIGGER executions_version_insert ON executions;
DROP TRIGGER executions_version_update ON executions;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION bump_request_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE requests SET version = version + 1 WHERE id = NEW.request_id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER executions_version_insert AFTER INSERT ON executions
    FOR EACH ROW EXECUTE FUNCTION bump_request_version();
CREATE TRIGGER executions_version_update AFTER UPDATE ON executions
    FOR EACH ROW WHEN ((OLD.state, OLD.attempts, OLD.last_code, OLD.provider_ref, OLD.response_status, OLD.response_body)
        IS DISTINCT FROM (NEW.state, NEW.attempts, NEW.last_code, NEW.provider_ref, NEW.response_status, NEW.response_body))
    EXECUTE FUNCTION bump_request_version();
