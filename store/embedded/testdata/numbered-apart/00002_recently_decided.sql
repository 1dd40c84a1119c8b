-- +goose Up

-- The review inbox lists the requests that most recently left pending.
CREATE INDEX requests_recently_decided ON requests (updated_at) WHERE status <> 'pending';

-- +goose Down
DROP INDEX requests_recently_decided;
