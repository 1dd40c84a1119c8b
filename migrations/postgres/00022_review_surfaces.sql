-- +goose Up

-- Review surfaces: Slack is one of them. An outbox row names the surface it
-- is for and, where it goes to one place, its destination; '' for both is
-- every surface of the request's tool, each at the tool's destination.
-- Rows written before surfaces were Slack's.
ALTER TABLE outbox ADD COLUMN surface text NOT NULL DEFAULT '',
    ADD COLUMN destination text NOT NULL DEFAULT '';
UPDATE outbox SET surface = 'slack';

-- One reminder and one escalation per round on each surface.
DROP INDEX outbox_nudge_once;
CREATE UNIQUE INDEX outbox_nudge_once ON outbox (request_id, round, surface, (data ->> 'nudge'))
    WHERE data ? 'nudge';

-- A round has a card on each of its surfaces, found again by an opaque
-- reference the surface reads (Slack's is channel/ts).
ALTER TABLE cards ADD COLUMN surface text NOT NULL DEFAULT 'slack', ADD COLUMN ref text;
UPDATE cards SET ref = channel || '/' || ts;
ALTER TABLE cards ALTER COLUMN ref SET NOT NULL, ALTER COLUMN surface DROP DEFAULT;
ALTER TABLE cards DROP CONSTRAINT cards_pkey;
ALTER TABLE cards ADD PRIMARY KEY (request_id, round, surface);
ALTER TABLE cards DROP COLUMN channel, DROP COLUMN ts;

-- The request points at its current round's first card.
ALTER TABLE requests RENAME COLUMN card_channel TO card_surface;
ALTER TABLE requests RENAME COLUMN card_ts TO card_ref;
UPDATE requests SET card_ref = card_surface || '/' || card_ref, card_surface = 'slack'
    WHERE card_ref IS NOT NULL;

-- Pacing is a surface's, per destination (a Slack channel).
ALTER TABLE slack_pacing RENAME TO surface_pacing;
ALTER TABLE surface_pacing RENAME COLUMN channel TO destination;
ALTER TABLE surface_pacing ADD COLUMN surface text NOT NULL DEFAULT 'slack';
ALTER TABLE surface_pacing ALTER COLUMN surface DROP DEFAULT;
ALTER TABLE surface_pacing DROP CONSTRAINT slack_pacing_pkey;
ALTER TABLE surface_pacing ADD PRIMARY KEY (surface, destination);

-- +goose Down
DELETE FROM surface_pacing WHERE surface <> 'slack';
ALTER TABLE surface_pacing DROP CONSTRAINT surface_pacing_pkey;
ALTER TABLE surface_pacing DROP COLUMN surface;
ALTER TABLE surface_pacing RENAME COLUMN destination TO channel;
ALTER TABLE surface_pacing RENAME TO slack_pacing;
ALTER TABLE slack_pacing ADD CONSTRAINT slack_pacing_pkey PRIMARY KEY (channel);

UPDATE requests SET card_surface = NULL, card_ref = NULL WHERE card_surface <> 'slack';
UPDATE requests SET card_surface = split_part(card_ref, '/', 1), card_ref = split_part(card_ref, '/', 2)
    WHERE card_surface = 'slack';
ALTER TABLE requests RENAME COLUMN card_ref TO card_ts;
ALTER TABLE requests RENAME COLUMN card_surface TO card_channel;

DELETE FROM cards WHERE surface <> 'slack';
ALTER TABLE cards ADD COLUMN channel text, ADD COLUMN ts text;
UPDATE cards SET channel = split_part(ref, '/', 1), ts = split_part(ref, '/', 2);
ALTER TABLE cards ALTER COLUMN channel SET NOT NULL, ALTER COLUMN ts SET NOT NULL;
ALTER TABLE cards DROP CONSTRAINT cards_pkey;
ALTER TABLE cards ADD PRIMARY KEY (request_id, round);
ALTER TABLE cards DROP COLUMN surface, DROP COLUMN ref;

DELETE FROM outbox WHERE surface NOT IN ('', 'slack');
DROP INDEX outbox_nudge_once;
CREATE UNIQUE INDEX outbox_nudge_once ON outbox (request_id, round, (data ->> 'nudge'))
    WHERE data ? 'nudge';
ALTER TABLE outbox DROP COLUMN surface, DROP COLUMN destination;
