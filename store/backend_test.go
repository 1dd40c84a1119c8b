package store_test

import (
	"testing"

	"github.com/countersign/countersign/store/drivertest"
)

// backend is one Store under test (drivertest.Backend).
type backend = drivertest.Backend

// backends opens a Store per driver.
var backends = []drivertest.Driver{drivertest.Postgres, drivertest.SQLite}

// forEachStore runs test once per driver, each on a fresh migrated
// database, and once more on PostgreSQL connected as the runtime role.
func forEachStore(t *testing.T, test func(t *testing.T, b *backend)) {
	t.Helper()
	for _, d := range append(backends[:len(backends):len(backends)], drivertest.PostgresAppRole) {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			test(t, d.Open(t, true))
		})
	}
}
