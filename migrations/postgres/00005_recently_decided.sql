-- +goose Up

-- The review inbox lists the requests that most recently left pending. New
-- (pending) requests stay out of this index, so intake does not pay for it.
CREATE INDEX requests_recently_decided ON requests (updated_at) WHERE status <> 'pending';

-- +goose Down
DROP INDEX requests_recently_decided;
