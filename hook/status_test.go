package hook

import (
	"testing"

	"github.com/countersign/countersign/approvals"
)

// Every refusal code has its own status, not the unknown code's 500 by
// default.
func TestStatusCoversEveryRefusalCode(t *testing.T) {
	t.Parallel()
	for _, code := range approvals.RefusalCodes() {
		if _, ok := statuses[code]; !ok {
			t.Errorf("%s has no HTTP status", code)
		}
	}
	if len(statuses) != len(approvals.RefusalCodes()) {
		t.Errorf("%d statuses for %d codes", len(statuses), len(approvals.RefusalCodes()))
	}
}
