// Package store is countersign's ledger without its database: the domain
// types, the Store interface the rest of countersign uses, the Driver
// interface a database implements, and Ledger, which implements Store once
// on any Driver. The drivers are store/postgres (pgx/v5, production) and
// store/embedded (SQLite, the one-command local run); store/drivertest holds
// the contract both pass.
//
// Every state change is one conditional driver statement, run in the same
// transaction as the audit event and the outbox rows the Ledger writes for
// it. Time is taken as a parameter where tests need to pin it: a nil
// *time.Time means the database clock. This package imports no database
// package (TestCoreImportsNoDatabase).
package store
