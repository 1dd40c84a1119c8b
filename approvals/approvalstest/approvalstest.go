// Package approvalstest builds the review service and the intents for the
// tests of the packages that sit on it (the executor, the bot, the inbox,
// the hook, serve). Package approvals' own internal tests cannot import it
// (it imports approvals); its external tests do.
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
