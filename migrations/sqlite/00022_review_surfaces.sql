-- +goose Up

-- Review surfaces (see PostgreSQL's migration of the same number).
ALTER TABLE outbox ADD COLUMN surface TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN destination TEXT NOT NULL DEFAULT '';
UPDATE outbox SET surface = 'slack';

DROP INDEX outbox_nudge_once;
CREATE UNIQUE INDEX outbox_nudge_once ON outbox (request_id, round, surface, json_extract(data, '$.nudge'))
    WHERE json_extract(data, '$.nudge') IS NOT NULL;

CREATE TABLE cards_by_surface (
    request_id     TEXT    NOT NULL REFERENCES requests (id),
    round          INTEGER NOT NULL,
    surface        TEXT    NOT NULL,
    ref            TEXT    NOT NULL,
    rendered_state TEXT    NOT NULL DEFAULT '',
    settled        INTEGER NOT NULL DEFAULT 0,
    posted_at      INTEGER NOT NULL,
    rendered_at    INTEGER NOT NULL,
    PRIMARY KEY (request_id, round, surface)
);
INSERT INTO cards_by_surface (request_id, round, surface, ref, rendered_state, settled, posted_at, rendered_at)
    SELECT request_id, round, 'slack', channel || '/' || ts, rendered_state, settled, posted_at, rendered_at FROM cards;
DROP TABLE cards;
ALTER TABLE cards_by_surface RENAME TO cards;
CREATE INDEX cards_unsettled ON cards (rendered_at) WHERE NOT settled;

ALTER TABLE requests RENAME COLUMN card_channel TO card_surface;
ALTER TABLE requests RENAME COLUMN card_ts TO card_ref;
UPDATE requests SET card_ref = card_surface || '/' || card_ref, card_surface = 'slack'
    WHERE card_ref IS NOT NULL;

CREATE TABLE surface_pacing (
    surface      TEXT    NOT NULL,
    destination  TEXT    NOT NULL,
    next_post_at INTEGER NOT NULL,
    paused_until INTEGER,
    PRIMARY KEY (surface, destination)
);
INSERT INTO surface_pacing (surface, destination, next_post_at, paused_until)
    SELECT 'slack', channel, next_post_at, paused_until FROM slack_pacing;
DROP TABLE slack_pacing;

-- +goose Down
CREATE TABLE slack_pacing (
    channel      TEXT PRIMARY KEY,
    next_post_at INTEGER NOT NULL,
    paused_until INTEGER
);
INSERT INTO slack_pacing (channel, next_post_at, paused_until)
    SELECT destination, next_post_at, paused_until FROM surface_pacing WHERE surface = 'slack';
DROP TABLE surface_pacing;

UPDATE requests SET card_surface = NULL, card_ref = NULL WHERE card_surface <> 'slack';
UPDATE requests SET card_surface = substr(card_ref, 1, instr(card_ref, '/') - 1),
    card_ref = substr(card_ref, instr(card_ref, '/') + 1)
    WHERE card_surface = 'slack';
ALTER TABLE requests RENAME COLUMN card_ref TO card_ts;
ALTER TABLE requests RENAME COLUMN card_surface TO card_channel;

CREATE TABLE cards_by_round (
    request_id     TEXT    NOT NULL REFERENCES requests (id),
    round          INTEGER NOT NULL,
    channel        TEXT    NOT NULL,
    ts             TEXT    NOT NULL,
    rendered_state TEXT    NOT NULL DEFAULT '',
    settled        INTEGER NOT NULL DEFAULT 0,
    posted_at      INTEGER NOT NULL,
    rendered_at    INTEGER NOT NULL,
    PRIMARY KEY (request_id, round)
);
INSERT INTO cards_by_round (request_id, round, channel, ts, rendered_state, settled, posted_at, rendered_at)
    SELECT request_id, round, substr(ref, 1, instr(ref, '/') - 1), substr(ref, instr(ref, '/') + 1),
        rendered_state, settled, posted_at, rendered_at FROM cards WHERE surface = 'slack';
DROP TABLE cards;
ALTER TABLE cards_by_round RENAME TO cards;
CREATE INDEX cards_unsettled ON cards (rendered_at) WHERE NOT settled;

DELETE FROM outbox WHERE surface NOT IN ('', 'slack');
DROP INDEX outbox_nudge_once;
CREATE UNIQUE INDEX outbox_nudge_once ON outbox (request_id, round, json_extract(data, '$.nudge'))
    WHERE json_extract(data, '$.nudge') IS NOT NULL;
ALTER TABLE outbox DROP COLUMN destination;
ALTER TABLE outbox DROP COLUMN surface;
