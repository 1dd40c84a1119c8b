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

Walks the checkpoints left by dropped months of audit events (each chained
to the one before), then every request's chain of audit events in the
configured database, and checks each event's hash, its number in its
request's chain and its link to the event before; a request whose first
events left with their month continues from its checkpoint. Exits 0 when
everything is intact, printing the last event verified, and 1 naming the
first checkpoint or event that does not match: edited, or with one removed,
added or moved before it. It reads only; run it with a role that may read
events and the checkpoints.
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
	if r.BadCheckpoint != nil {
		fmt.Fprintf(stdout, "%s: %d checkpoints verified\n", where, r.Checkpoints)
		return fmt.Errorf("%w: %s: %s", errAuditBroken, describeCheckpoint(*r.BadCheckpoint), r.Problem)
	}
	if r.Bad != nil {
		fmt.Fprintf(stdout, "%s: %d events verified; last intact: %s\n", where, r.Events, last)
		return fmt.Errorf("%w: %s: %s", errAuditBroken, describeEvent(*r.Bad), r.Problem)
	}
	fmt.Fprintf(stdout, "%s: audit intact: %d events of %d requests; last verified: %s\n", where, r.Events, r.Requests, last)
	if r.Checkpoints > 0 {
		fmt.Fprintf(stdout, "%s: %d checkpoints of dropped months intact; %d requests continue from one\n", where, r.Checkpoints, r.Resumed)
	}
	return nil
}

// describeCheckpoint names a checkpoint as an auditor finds it again.
func describeCheckpoint(c store.AuditCheckpoint) string {
	return fmt.Sprintf("checkpoint %d (%s, %d events from %s to %s, dropped by %s at %s)", c.ID, c.Partition, c.Events,
		c.From.UTC().Format(time.RFC3339), c.To.UTC().Format(time.RFC3339), c.DroppedBy, c.DroppedAt.UTC().Format(time.RFC3339Nano))
}

// describeEvent names an event as an auditor finds it again.
func describeEvent(e store.AuditEvent) string {
	return fmt.Sprintf("event %d (request %s, number %d, %s by %s at %s)", e.ID, e.RequestID, e.Seq, e.Kind, e.Actor,
		e.At.UTC().Format(time.RFC3339Nano))
}
