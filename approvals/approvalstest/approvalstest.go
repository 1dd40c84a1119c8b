// Package approvalstest builds the review service for the tests of the
// packages that sit on it (the executor, the bot, the inbox, serve).
package approvalstest

import (
	"testing"

	"github.com/countersign/countersign/approvals"
)

// New returns the service for cfg and fails the test if cfg is refused.
func New(t testing.TB, cfg approvals.Config) *approvals.Service {
	t.Helper()
	svc, err := approvals.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}
