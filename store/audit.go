package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
)

// AuditEvent is an audit event as its chain holds it. Each request's events
// form one chain: Seq counts them from 1, PrevHash is the hash of the event
// before (empty for the first) and Hash is EventHash of the event. The
// database computes them as the event is inserted, in its transaction.
type AuditEvent struct {
	ID        int64
	RequestID string
	Seq       int
	At        time.Time
	Actor     string
	Kind      string
	// Data is the event's data exactly as the database holds its text.
	Data     string
	PrevHash string
	Hash     string
}

// EventHash is the hash that chains e to the event before it: the hex
// SHA-256 of its previous hash, id, request id, sequence number, time (in
// microseconds since the epoch), actor, kind and data, one per line.
// PostgreSQL computes the same in its trigger (countersign_event_hash);
// VerifyAudit holds both to it.
func EventHash(e AuditEvent) string {
	h := sha256.New()
	for i, field := range []string{e.PrevHash, strconv.FormatInt(e.ID, 10), e.RequestID, strconv.Itoa(e.Seq),
		strconv.FormatInt(e.At.UnixMicro(), 10), e.Actor, e.Kind, e.Data} {
		if i > 0 {
			h.Write([]byte{'\n'})
		}
		h.Write([]byte(field))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// AuditCursor is where a walk of the chains stands: after event Seq of
// request RequestID, in (request id, seq) order.
type AuditCursor struct {
	RequestID string
	Seq       int
}

// AuditReport is what VerifyAudit found.
type AuditReport struct {
	Events, Requests int
	// Checkpoints is how many checkpoints of dropped months verified, and
	// Resumed how many request chains start from one.
	Checkpoints, Resumed int
	// BadCheckpoint is the first checkpoint that does not match, checked
	// before any event; Bad the first event that does not match. Problem
	// says how; both nil when everything is intact.
	BadCheckpoint *AuditCheckpoint
	Bad           *AuditEvent
	Problem       string
	// Last is the last event verified intact before Bad (or of the walk).
	Last AuditEvent

	// Held to an anchor (VerifyAuditAnchor): Anchored counts its heads
	// found in their chains as it holds them, AnchorDropped those that left
	// since with a dropped month its checkpoint records. AnchorMismatches
	// lists the others (the first MaxAnchorMismatches), each naming its
	// request, and AnchorMismatchCount counts them all. AnchorCheckpoint
	// says how the checkpoint the anchor names no longer matches ("" when
	// it does).
	Anchored, AnchorDropped int
	AnchorMismatches        []AnchorMismatch
	AnchorMismatchCount     int
	AnchorCheckpoint        string
}

// auditPage is how many events VerifyAudit reads at a time.
const auditPage = 1000

// VerifyAudit walks the checkpoints of dropped months, then every
// request's chain of audit events, and reports the first checkpoint or
// event that does not match: one whose hash is not its own (edited), or
// whose sequence number or previous hash is not the one before it (an
// event removed, inserted or moved before it). A request whose first
// events were dropped with their month starts from its checkpoint head.
func (l *Ledger) VerifyAudit(ctx context.Context) (AuditReport, error) {
	r, _, err := l.walkAudit(ctx, nil)
	return r, err
}

// auditWalk is what a walk of the chains does beside verifying them
// (VerifyAudit's walk): it sees the checkpoints once they verified, then
// every event found intact, in the chains' order (request id, seq), and
// each request's last event after its others.
type auditWalk interface {
	checkpoints(ctx context.Context, cps []AuditCheckpoint) error
	event(ctx context.Context, e AuditEvent) error
	chainEnd(ctx context.Context, last AuditEvent) error
}

// walkAudit verifies the checkpoints, then walks the chains, showing w (if
// any) every event verified; it returns the checkpoints it verified. It
// stops at the first checkpoint or event that does not match.
func (l *Ledger) walkAudit(ctx context.Context, w auditWalk) (AuditReport, []AuditCheckpoint, error) {
	var (
		r      AuditReport
		after  AuditCursor
		prev   AuditEvent
		inside bool
	)
	cps, bad, problem, err := l.verifyCheckpoints(ctx)
	r.Checkpoints = len(cps)
	if err != nil || bad != nil {
		r.BadCheckpoint, r.Problem = bad, problem
		return r, cps, err
	}
	if w != nil {
		if err := w.checkpoints(ctx, cps); err != nil {
			return r, cps, err
		}
	}
	end := func() error {
		if w == nil || !inside {
			return nil
		}
		return w.chainEnd(ctx, prev)
	}
	for {
		page, err := l.AuditChain(ctx, after, auditPage)
		if err != nil {
			return r, cps, fmt.Errorf("reading the audit chain: %w", err)
		}
		for _, e := range page {
			if !inside || e.RequestID != prev.RequestID {
				if err := end(); err != nil {
					return r, cps, err
				}
				prev, inside = AuditEvent{RequestID: e.RequestID}, true
				r.Requests++
				if e.Seq > 1 {
					head, found, err := l.LastCheckpointHead(ctx, e.RequestID)
					if err != nil {
						return r, cps, fmt.Errorf("reading the audit checkpoints: %w", err)
					}
					if found {
						prev.Seq, prev.Hash = head.Seq, head.Hash
						r.Resumed++
					}
				}
			}
			switch {
			case e.Seq != prev.Seq+1 || e.PrevHash != prev.Hash:
				r.Bad, r.Problem = &e, fmt.Sprintf("it is number %d of its request and chains to %.12s, where the event before it is number %d with hash %.12s: an event was removed, added or moved", e.Seq, e.PrevHash, prev.Seq, prev.Hash)
			case EventHash(e) != e.Hash:
				r.Bad, r.Problem = &e, "its hash does not match its contents: it was edited"
			}
			if r.Bad != nil {
				return r, cps, nil
			}
			r.Events++
			r.Last, prev = e, e
			if w != nil {
				if err := w.event(ctx, e); err != nil {
					return r, cps, err
				}
			}
		}
		if len(page) < auditPage {
			return r, cps, end()
		}
		last := page[len(page)-1]
		after = AuditCursor{RequestID: last.RequestID, Seq: last.Seq}
	}
}
