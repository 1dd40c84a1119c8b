package embedded

import (
	"crypto/rand"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Times are stored as unix microseconds: PostgreSQL's precision, so both
// stores return the same instants, and integers compare and sort like times.

// clock returns now, or the current time when now is nil, at the stored
// precision. PostgreSQL's now() is one value per transaction; a transaction
// takes the clock once (writeTx.clock) for the same reason.
func clock(now *time.Time) time.Time {
	if now != nil {
		return fromMicros(now.UnixMicro())
	}
	return fromMicros(time.Now().UnixMicro())
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// newID returns a random (version 4) UUID in PostgreSQL's text form.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// canonicalID returns id as stored (lowercase): PostgreSQL's uuid type
// compares case-insensitively.
func canonicalID(id string) string { return strings.ToLower(id) }

// jsonData binds event and outbox data as JSON text; nil is the empty
// object.
type jsonData map[string]any

func (d jsonData) Value() (driver.Value, error) {
	if d == nil {
		return "{}", nil
	}
	b, err := json.Marshal(map[string]any(d))
	if err != nil {
		return nil, fmt.Errorf("encoding data: %w", err)
	}
	return string(b), nil
}

// nullBytes binds a nil slice as NULL, as pgx does.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
