-- +goose Up

-- The lookup by business id (/countersign inv_8841) searches the GIN index
-- on effect_strings. With fastupdate, on by default, each insert appends
-- its entries to the index's pending list, which every search then reads
-- whole, until a vacuum, or the insert that takes the list past
-- gin_pending_list_limit (4 MB), merges it into the index. Autovacuum
-- comes by insert count only after a fifth of the table has been inserted
-- again (autovacuum_vacuum_insert_scale_factor), so a large ledger's list
-- stays near full between merges: 30,000 pending requests made one lookup
-- 4.5 to 11 ms against 0.5 ms with none, and the insert that merges the
-- list waits for the merge. Each insert now writes its three or so entries
-- in place, which costs an insert of 30,000 requests about a tenth more,
-- and the entries already pending are merged here.
ALTER INDEX requests_effect_strings SET (fastupdate = off);
SELECT gin_clean_pending_list('requests_effect_strings'::regclass);

-- +goose Down
ALTER INDEX requests_effect_strings RESET (fastupdate);
