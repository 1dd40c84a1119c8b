package embedded

import (
	"database/sql"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/countersign/countersign/store"
)

// wrap turns a driver error into the store's domain errors, in one place,
// and says what failed: no row is store.ErrNotFound (bare, as callers
// compare it), a unique key store.ErrConflict, and the file out of reach
// store.ErrUnavailable: another connection (or process) held the lock past
// the busy timeout, or the Store is closed.
func wrap(what string, err error) error {
	if err == nil || errors.Is(err, store.ErrNotFound) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	var sqlErr *sqlite.Error
	isSQLite := errors.As(err, &sqlErr)
	switch {
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrConflict):
	case isSQLite && (sqlErr.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || sqlErr.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY):
		err = errors.Join(store.ErrConflict, err)
	case isSQLite && (sqlErr.Code()&0xff == sqlite3.SQLITE_BUSY || sqlErr.Code()&0xff == sqlite3.SQLITE_LOCKED),
		errors.Is(err, errClosed), errors.Is(err, sql.ErrConnDone):
		err = fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// found is wrap for a conditional statement: no row is ok false, not an
// error.
func found(what string, err error) (ok bool, _ error) {
	if err = wrap(what, err); errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// errClosed is what database/sql answers once a *sql.DB is closed. It does
// not export it, so it is taken from a pool closed for the purpose (sql.Open
// connects to nothing).
var errClosed = func() error {
	db, err := sql.Open("sqlite", "")
	if err != nil {
		return err
	}
	db.Close()
	return db.Ping()
}()
