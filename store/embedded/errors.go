package embedded

import (
	"database/sql"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/countersign/countersign/store"
)

// translate turns driver errors into the store's domain errors, in one place.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	var sqlErr *sqlite.Error
	if errors.As(err, &sqlErr) {
		switch sqlErr.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return errors.Join(store.ErrConflict, err)
		}
	}
	return unavailable(err)
}

// wrap is translate with context, the form every primitive returns.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	err = translate(err)
	if errors.Is(err, store.ErrNotFound) {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// unavailable marks err with store.ErrUnavailable when it means the file is
// out of reach rather than refusing the statement: another connection (or
// process) held the lock past the busy timeout, or the Store is closed.
func unavailable(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) {
		return err
	}
	var sqlErr *sqlite.Error
	if errors.As(err, &sqlErr) {
		switch sqlErr.Code() & 0xff { // the primary code of an extended one
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
	}
	if errors.Is(err, errClosed) || errors.Is(err, sql.ErrConnDone) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
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
