-- +goose Up

-- A request's row is updated after it is stored: its version goes up at
-- every change an agent can see (each claim and outcome of its execution,
-- each vote), and none of those updates touches an indexed column. Such an
-- update stays on the row's page, writing no index entry (a HOT update),
-- only when the page has room; intake fills pages to the brim at the
-- default fillfactor, so every bump wrote a new entry into each of the
-- table's ten indexes, the GIN one over effect strings included. 85 leaves
-- room for a few row versions per page, reclaimed as they die, at the cost
-- of a table about 15 % larger. Pages written before this keep no room.
ALTER TABLE requests SET (fillfactor = 85);

-- +goose Down
ALTER TABLE requests RESET (fillfactor);
