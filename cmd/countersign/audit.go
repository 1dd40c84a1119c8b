package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store"
)

const auditUsage = `usage: countersign audit verify [--anchor FILE]
       countersign audit anchor [FILE]

verify walks the checkpoints left by dropped months of audit events (each
chained to the one before), then every request's chain of audit events in
the configured database, and checks each event's hash, its number in its
request's chain and its link to the event before; a request whose first
events left with their month continues from its checkpoint. Exits 0 when
everything is intact, printing the last event verified, and 1 naming the
first checkpoint or event that does not match: edited, or with one removed,
added or moved before it.

A chain alone cannot show that its last events, or all of them, were
deleted, nor that the database's owner edited an event and computed the
chain again. anchor verifies the same way and then writes an anchor: the
head of every request's chain (its last event's number and hash) and the
newest checkpoint, with a digest over them all, as JSON Lines, the summary
(time, counts, digest) last. With FILE it writes FILE (0600, atomically;
gzip-compressed when FILE ends in .gz) and prints the summary; without, it
writes the whole anchor to stdout. Keep the file, or at least publish the
summary, where the database's owner cannot write.

verify --anchor FILE also holds the trail to that anchor: the file must
match its digest, the checkpoint it names must be unchanged, and every head
it holds must still be in its chain with the same hash (later events are
fine) or have left with a month dropped since, whose checkpoint holds that
request's head. Exits 1 naming each request whose events were changed,
removed or hashed again since the anchor.

Both only read; run them with a role that may read events and the
checkpoints.
`

// errAuditBroken ends audit verify with exit code 1 once the first bad
// event has been named.
var errAuditBroken = errors.New("the audit trail does not verify")

// errAnchorBroken ends audit verify --anchor with exit code 1 once the
// requests that no longer match the anchor have been named.
var errAnchorBroken = errors.New("the audit trail does not match the anchor")

// auditCommand runs audit's subcommands.
func auditCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (code int, err error) {
	if len(args) == 0 || (args[0] != "verify" && args[0] != "anchor") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprint(stdout, auditUsage)
			return 0, nil
		}
		fmt.Fprint(stderr, auditUsage)
		return 2, nil
	}
	var anchor string
	maxArgs := 0
	define := func(fs *flag.FlagSet) { fs.StringVar(&anchor, "anchor", "", "") }
	if args[0] == "anchor" {
		maxArgs, define = 1, nil
	}
	rest, code, ok := parseArgs("audit "+args[0], auditUsage, args[1:], maxArgs, define, stdout, stderr)
	if !ok {
		return code, nil
	}
	if args[0] == "anchor" {
		file := ""
		if len(rest) == 1 {
			file = rest[0]
		}
		return 0, auditAnchor(ctx, file, getenv, stdout)
	}
	return 0, auditVerify(ctx, anchor, getenv, stdout)
}

// auditVerify verifies the audit chains, against the anchor file if one is
// named, and says where they stand.
func auditVerify(ctx context.Context, anchorPath string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	var summary anchorSummary
	if anchorPath != "" {
		// The file is checked whole before the database is read.
		if summary, err = readAnchorSummary(anchorPath); err != nil {
			return err
		}
	}
	s, where, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	var r store.AuditReport
	if anchorPath == "" {
		r, err = s.VerifyAudit(ctx)
	} else {
		var heads *anchorReader
		if heads, err = openAnchor(anchorPath, summary.Digest); err != nil {
			return err
		}
		defer heads.Close()
		r, err = s.VerifyAuditAnchor(ctx, store.Anchor{Checkpoint: summary.checkpoint(), Next: heads.next})
	}
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
	if anchorPath == "" {
		return nil
	}
	anchor := fmt.Sprintf("the anchor of %s (digest %s)", summary.At.Format(time.RFC3339), summary.Digest)
	for _, m := range r.AnchorMismatches {
		fmt.Fprintf(stdout, "%s: request %s: %s\n", where, m.Head.RequestID, m.Problem)
	}
	if more := r.AnchorMismatchCount - len(r.AnchorMismatches); more > 0 {
		fmt.Fprintf(stdout, "%s: and %d more requests\n", where, more)
	}
	switch {
	case r.AnchorCheckpoint != "":
		return fmt.Errorf("%w, %s: %s", errAnchorBroken, anchor, r.AnchorCheckpoint)
	case r.AnchorMismatchCount > 0:
		m := r.AnchorMismatches[0]
		return fmt.Errorf("%w, %s: %d of its %d requests: request %s: %s", errAnchorBroken, anchor, r.AnchorMismatchCount,
			summary.Requests, m.Head.RequestID, m.Problem)
	}
	fmt.Fprintf(stdout, "%s: %s holds: %d requests' heads unchanged in their chains, %d left with months dropped since\n",
		where, anchor, r.Anchored, r.AnchorDropped)
	return nil
}

// auditAnchor verifies the audit trail and writes its anchor: to file if
// named, printing the summary, else all of it to stdout.
func auditAnchor(ctx context.Context, file string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	s, _, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	var (
		summary anchorSummary
		r       store.AuditReport
	)
	now := time.Now()
	summary, r, err = takeAnchor(ctx, s, file, stdout, now)
	switch {
	case err != nil:
		return err
	case r.BadCheckpoint != nil:
		return fmt.Errorf("%w, so no anchor was taken: %s: %s", errAuditBroken, describeCheckpoint(*r.BadCheckpoint), r.Problem)
	case r.Bad != nil:
		return fmt.Errorf("%w, so no anchor was taken: %s: %s", errAuditBroken, describeEvent(*r.Bad), r.Problem)
	}
	if file != "" {
		return json.NewEncoder(stdout).Encode(summary)
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
