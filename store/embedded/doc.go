// Package embedded is countersign's ledger in one SQLite file, for a
// one-command local run: the same store.Store contract as the PostgreSQL DB,
// on modernc.org/sqlite (pure Go).
//
// PostgreSQL decides races with row locks and conditional statements; here
// every write transaction runs on one writer connection with BEGIN IMMEDIATE,
// so writes are serialised and a transaction's reads cannot go stale before
// its writes. Each method keeps the PostgreSQL version's conditions, so the
// two agree row for row. What PostgreSQL's triggers NOTIFY, the Store tells
// its Hub after the commit.
package embedded
