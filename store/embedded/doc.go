// Package embedded is the store.Driver on one SQLite file, for a
// one-command local run, on modernc.org/sqlite (pure Go). Its statements are
// in queries.sql.
//
// PostgreSQL decides races with row locks and conditional statements; here
// every write transaction runs on one writer connection with BEGIN IMMEDIATE,
// so writes are serialised and a transaction's reads cannot go stale before
// its writes. Each primitive keeps the PostgreSQL statement's conditions, so
// the two agree row for row under the same store.Ledger. What PostgreSQL's
// triggers NOTIFY, the driver tells its Hub after the commit.
package embedded
