-- +goose Up

-- cards: the Slack message that shows one round of a request. rendered_state is
-- the card state (countersign_card_state) the message last showed, so the
-- convergence sweep finds cards whose last update did not land; settled cards
-- can no longer change and leave the sweep's index.
CREATE TABLE cards (
    request_id     uuid        NOT NULL REFERENCES requests (id),
    round          integer     NOT NULL,
    channel        text        NOT NULL,
    ts             text        NOT NULL,
    rendered_state text        NOT NULL DEFAULT '',
    settled        boolean     NOT NULL DEFAULT false,
    posted_at      timestamptz NOT NULL DEFAULT now(),
    rendered_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (request_id, round)
);

CREATE INDEX cards_unsettled ON cards (rendered_at) WHERE NOT settled;

-- countersign_card_state is what a round's card must show, as one string:
-- superseded for an old round, pending/rejected/expired/cancelled, or
-- approved/<execution state>/<attempts>. The worker stores it after each
-- render; the sweep compares.
-- +goose StatementBegin
CREATE FUNCTION countersign_card_state(req uuid, rnd integer) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
SELECT CASE
    WHEN r.round > rnd THEN 'superseded'
    WHEN r.status = 'approved' THEN 'approved/' || coalesce(e.state || '/' || e.attempts, 'none')
    ELSE r.status
END
FROM requests r
LEFT JOIN decisions d ON d.request_id = r.id AND d.round = rnd
LEFT JOIN executions e ON e.decision_id = d.id
WHERE r.id = req
$$;
-- +goose StatementEnd

-- countersign_effect_strings lists every string value in an effect, at any
-- depth, so a support engineer can find requests by a business id
-- (/countersign inv_8841). Long strings (notes, descriptions) are left out:
-- they are not ids and would overflow a GIN entry.
-- +goose StatementBegin
CREATE FUNCTION countersign_effect_strings(effect jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT coalesce(array_agg(DISTINCT s), '{}')
FROM (SELECT jsonb_path_query(effect, 'strict $.** ? (@.type() == "string")') #>> '{}' AS s) v
WHERE length(s) BETWEEN 1 AND 200
$$;
-- +goose StatementEnd

CREATE INDEX requests_effect_strings ON requests USING gin (countersign_effect_strings(effect));

-- /countersign unknown lists writes waiting on a human.
CREATE INDEX IF NOT EXISTS executions_needs_review ON executions (updated_at) WHERE state = 'needs_review';
-- A lookup reads every execution of one request.
CREATE INDEX IF NOT EXISTS executions_request ON executions (request_id, id);

-- +goose Down
DROP INDEX IF EXISTS executions_request;
DROP INDEX IF EXISTS executions_needs_review;
DROP INDEX requests_effect_strings;
DROP FUNCTION countersign_effect_strings;
DROP FUNCTION countersign_card_state;
DROP TABLE cards;
