package store

import "errors"

// ErrNotFound is returned when no row matches.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a unique constraint refuses a write.
var ErrConflict = errors.New("conflict")
