package main

import (
	"cmp"
	"context"
	"os"
	"sync"

	"github.com/countersign/countersign/cmd/internal/benchserve"
)

// scope holds what a run set up and undoes it at the end, last first, as a
// test's cleanups are run.
type scope struct {
	mu       sync.Mutex
	cleanups []func()
}

// Cleanup registers f to run when the run ends.
func (s *scope) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

// close runs the cleanups, last registered first, as testing does.
func (s *scope) close() {
	s.mu.Lock()
	fs := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// adminURLEnv names the PostgreSQL server the run's databases are created
// on (-database-url; the run's own cluster with -restart-postgres): the
// variable the test helpers read, so a run started by go test lands where
// its tests do.
const adminURLEnv = "COUNTERSIGN_TEST_DATABASE_URL"

// adminURL is the server of adminURLEnv, or the local default.
func adminURL() string {
	return cmp.Or(os.Getenv(adminURLEnv), benchserve.DefaultAdminURL)
}

// scratchDatabase creates an empty database on adminURL's server, dropped
// when the run ends, and returns its URL. Named as the test helpers name
// theirs, scripts/drop-test-databases finds one a killed run left.
func (s *scope) scratchDatabase(ctx context.Context) (string, error) {
	dbURL, drop, err := benchserve.ScratchDatabase(ctx, adminURL(), "cs_empty")
	if err != nil {
		return "", err
	}
	s.Cleanup(drop)
	return dbURL, nil
}
