// Package store is countersign's system of record on PostgreSQL (pgx/v5).
// Store is the contract the rest of countersign uses; DB implements it here,
// and package store/embedded implements it on SQLite for a local run.
//
// Every state change is one conditional statement, and each runs in the same
// transaction as its audit event and outbox row. Methods named XTx join the
// caller's transaction; the others run on the pool. Time is taken as a
// parameter where tests need to pin it: a nil *time.Time means the database
// clock.
package store
