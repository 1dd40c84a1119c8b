// Package postgres is the store.Driver on PostgreSQL through a pgx/v5 pool:
// the primitives and the one-statement hot paths (queries.sql), the LISTEN
// connection that wakes waiters, migrations under an advisory lock, the
// runtime role (GrantAppRole), and the one place a PostgreSQL error is
// called an outage (store.ErrUnavailable).
package postgres
