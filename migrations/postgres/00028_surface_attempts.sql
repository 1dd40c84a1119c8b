-- +goose Up

-- Failed attempts at something a surface hands out, counted for every
-- replica: an email link's wrong addresses. key is a digest of the thing
-- (never a link's token itself); a row is needed only until the thing
-- expires, and is deleted after.
CREATE TABLE surface_attempts (
    surface    text        NOT NULL,
    key        text        NOT NULL,
    attempts   integer     NOT NULL CHECK (attempts > 0),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (surface, key)
);
CREATE INDEX surface_attempts_expiry ON surface_attempts (expires_at);

-- +goose Down
DROP TABLE surface_attempts;
