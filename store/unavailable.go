package store

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

// ErrUnavailable marks a store error as the store being out of reach rather
// than refusing the call. The embedded store wraps its driver's such errors
// with it; PostgreSQL's are recognised by IsUnavailable as they are.
var ErrUnavailable = errors.New("store unavailable")

// IsUnavailable reports whether err means the store could not be reached, so
// that the same call may succeed once it is back: the database down,
// restarting or refusing connections, a connection broken mid-statement, a
// closed pool, or (embedded) a file locked past the busy timeout or closed.
// An error the database answered (a constraint, a value it refuses) is not,
// nor is the caller's own cancellation, nor a statement that outlived its
// deadline on a database that answers.
//
// This is the one place countersign tells an outage from a failure: the
// agent hook answers it 503 unavailable, the inbox and Slack ask to try again
// in a moment, and a failed group commit is not retried member by member.
func IsUnavailable(err error) bool {
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, ErrUnavailable):
		return true
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
	// Neither a statement that used up its deadline nor a failed HTTP call
	// (Slack's, while deciding) is the database out of reach, whatever
	// network error the call carries.
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
