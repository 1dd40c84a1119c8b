package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/countersign/countersign/store"
)

const auditUsage = `usage: countersign audit verify

Walks every request's chain of audit events in the configured database and
checks each event's hash, its number in its request's chain and its link to
the event before. Exits 0 when every chain is intact, and 1 naming the first
event that does not match: edited, or with an event removed, added or moved
before it. It reads only; run it with a role that may read events.
`

// errAuditBroken ends audit verify with exit code 1 once the first bad
// event has been named.
var errAuditBroken = errors.New("the audit trail does not verify")

// auditVerify verifies the audit chains and says where they stand.
func auditVerify(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return err
	}
	s, where, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	r, err := s.VerifyAudit(ctx)
	if err != nil {
		return err
	}
	last := "none"
	if r.Last.ID != 0 {
		last = describeEvent(r.Last)
	}
	if r.Bad != nil {
		fmt.Fprintf(stdout, "%s: %d events verified; last intact: %s\n", where, r.Events, last)
		return fmt.Errorf("%w: %s: %s", errAuditBroken, describeEvent(*r.Bad), r.Problem)
	}
	fmt.Fprintf(stdout, "%s: audit intact: %d events of %d requests; last verified: %s\n", where, r.Events, r.Requests, last)
	return nil
}

// describeEvent names an event as an auditor finds it again.
func describeEvent(e store.AuditEvent) string {
	return fmt.Sprintf("event %d (request %s, number %d, %s by %s at %s)", e.ID, e.RequestID, e.Seq, e.Kind, e.Actor,
		e.At.UTC().Format(time.RFC3339Nano))
}
