-- +goose Up

-- What a request's write changes, as its tool's preview endpoint said before
-- the first card was posted: field by field (changes, a JSON array of
-- {field, before, after}) or the provider's summary; a failed preview keeps
-- why. One row per request, inserted fetching by the worker that claims the
-- fetch (the first insert wins, so one fetch per request across replicas)
-- and written once with the outcome. It leaves with its request.
--
-- The console's comparison with the latest earlier request of the same
-- tool and business id needs no index of its own: it reads the GIN index on
-- effect_strings, as a lookup by business id does, and filters those
-- requests by tool and time.
CREATE TABLE previews (
    request_id  uuid        PRIMARY KEY REFERENCES requests (id) ON DELETE CASCADE,
    state       text        NOT NULL CHECK (state IN ('fetching', 'ready', 'failed')),
    changes     jsonb,
    summary     text        NOT NULL DEFAULT '',
    reason      text        NOT NULL DEFAULT '',
    started_at  timestamptz NOT NULL,
    finished_at timestamptz
);

-- +goose Down
DROP TABLE previews;
