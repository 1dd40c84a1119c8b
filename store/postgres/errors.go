package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/countersign/countersign/store"
)

// translate turns driver errors into the store's domain errors, in one place.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return errors.Join(store.ErrConflict, err)
		case "22P02", "22021":
			// An argument its column's type cannot hold (invalid_text_representation:
			// an id that is not a UUID; character_not_in_repertoire: text
			// holding NUL) names no row, as SQLite finds none for it.
			return store.ErrNotFound
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

// unavailable marks err with store.ErrUnavailable when it means PostgreSQL
// is out of reach rather than refusing the statement (see outage).
func unavailable(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) || !outage(err) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// outage reports whether err means the database could not be reached, so
// that the same call may succeed once it is back: the server down,
// restarting or refusing connections, a connection broken mid-statement, a
// closed pool. An error the server answered (a constraint, a value it
// refuses) is not, nor is the caller's own cancellation, nor a statement
// that outlived its deadline on a database that answers.
func outage(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	// A server that answers says why: only its connection and shutdown
	// codes mean it is out of reach. This holds inside a connect error too
	// (a wrong password is not an outage).
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableState(pgErr.Code)
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var urlErr *url.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &urlErr) {
		return false
	}
	// pgx returns a connection cut mid-statement bare (unexpected EOF, a
	// reset), and one that failed before anything was sent as SafeToRetry.
	var opErr *net.OpError
	return errors.As(err, &opErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, puddle.ErrClosedPool)
}

// unavailableState reports whether a SQLSTATE says the server cannot serve
// now: class 08 (connection exception), 57P01 admin_shutdown, 57P02
// crash_shutdown, 57P03 cannot_connect_now (starting up or in recovery) and
// 53300 too_many_connections.
func unavailableState(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", "53300":
		return true
	}
	return strings.HasPrefix(code, "08")
}
