-- +goose Up

-- The string values of a request's effect (store.EffectStrings), computed at
-- intake instead of by countersign_effect_strings(effect) in the database on
-- every insert, and GIN-indexed for the lookup by business id. The jsonb copy
-- of the effect served only that index; the snapshot keeps the exact bytes.
ALTER TABLE requests ADD COLUMN effect_strings text[];
UPDATE requests SET effect_strings = countersign_effect_strings(effect);
ALTER TABLE requests ALTER COLUMN effect_strings SET NOT NULL;
DROP INDEX requests_effect_strings;
CREATE INDEX requests_effect_strings ON requests USING gin (effect_strings);
ALTER TABLE requests DROP COLUMN effect;

-- +goose Down
ALTER TABLE requests ADD COLUMN effect jsonb;
UPDATE requests SET effect = convert_from(snapshot, 'UTF8')::jsonb;
ALTER TABLE requests ALTER COLUMN effect SET NOT NULL;
DROP INDEX requests_effect_strings;
CREATE INDEX requests_effect_strings ON requests USING gin (countersign_effect_strings(effect));
ALTER TABLE requests DROP COLUMN effect_strings;
