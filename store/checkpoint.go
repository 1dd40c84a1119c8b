package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"time"
)

// AuditCheckpoint is the record a dropped month of audit events leaves (see
// Ledger.DropAudit): the month's range, how many events it held, a digest
// of their hashes and, in its heads, the last event of each request chain
// it cut, where that request's remaining events continue. Checkpoints chain
// to each other as events do: PrevHash is the hash of the checkpoint before,
// Hash is CheckpointHash of this one.
type AuditCheckpoint struct {
	ID        int64
	Partition string
	From, To  time.Time
	Events    int64
	// Digest is the hex SHA-256 of the dropped events' hashes, one a line,
	// in the chains' order (request id, seq).
	Digest    string
	DroppedBy string
	DroppedAt time.Time
	PrevHash  string
	Hash      string
}

// CheckpointHead is the last dropped event of one request chain.
type CheckpointHead struct {
	RequestID string
	Seq       int
	Hash      string
}

// HeadsDigest sums a checkpoint's heads, read in request id order: the hex
// SHA-256 of "request seq hash" lines.
type HeadsDigest struct {
	h     hash.Hash
	lines int
}

// NewHeadsDigest starts a digest of heads.
func NewHeadsDigest() *HeadsDigest { return &HeadsDigest{h: sha256.New()} }

// Add adds the next head.
func (d *HeadsDigest) Add(head CheckpointHead) {
	if d.lines > 0 {
		d.h.Write([]byte{'\n'})
	}
	d.lines++
	fmt.Fprintf(d.h, "%s %d %s", head.RequestID, head.Seq, head.Hash)
}

// Sum is the digest of the heads added.
func (d *HeadsDigest) Sum() string { return hex.EncodeToString(d.h.Sum(nil)) }

// CheckpointHash is the hash that chains c to the checkpoint before it: the
// hex SHA-256 of its previous hash, id, partition, range (microseconds since
// the epoch), event count, digest, heads digest, who dropped it and when,
// one a line. PostgreSQL computes the same (countersign_checkpoint_hash).
func CheckpointHash(c AuditCheckpoint, headsDigest string) string {
	h := sha256.New()
	for i, field := range []string{c.PrevHash, strconv.FormatInt(c.ID, 10), c.Partition,
		strconv.FormatInt(c.From.UnixMicro(), 10), strconv.FormatInt(c.To.UnixMicro(), 10),
		strconv.FormatInt(c.Events, 10), c.Digest, headsDigest, c.DroppedBy,
		strconv.FormatInt(c.DroppedAt.UnixMicro(), 10)} {
		if i > 0 {
			h.Write([]byte{'\n'})
		}
		h.Write([]byte(field))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// AuditMonthsAhead is how many months after this one the partitions of the
// audit trail are created ahead (PrepareAuditMonths).
const AuditMonthsAhead = 2

// PrepareAuditMonths creates the audit trail's partitions of this month and
// the next AuditMonthsAhead, where the store partitions it, and returns how
// many it created.
func (l *Ledger) PrepareAuditMonths(ctx context.Context) (int, error) {
	n, err := l.driver.PrepareAuditMonths(ctx, AuditMonthsAhead)
	if err != nil {
		return n, fmt.Errorf("creating the audit's partitions ahead: %w", err)
	}
	return n, nil
}

// DropAudit drops the whole months of audit events that ended before
// before, oldest first, each leaving its AuditCheckpoint, and returns how
// many months went. The store drops no month younger than its own floor,
// whatever before says (PostgreSQL's audit_floor).
func (l *Ledger) DropAudit(ctx context.Context, before time.Time) (int, error) {
	n, err := l.driver.DropAuditMonths(ctx, before)
	if err != nil {
		return n, fmt.Errorf("dropping audit months: %w", err)
	}
	return n, nil
}

// verifyCheckpoints walks the checkpoints in order: each must chain to the
// one before and match its own contents and heads. It returns those that
// verified and the first that does not, with how.
func (l *Ledger) verifyCheckpoints(ctx context.Context) (ok []AuditCheckpoint, bad *AuditCheckpoint, problem string, err error) {
	cps, err := l.AuditCheckpoints(ctx)
	if err != nil {
		return nil, nil, "", fmt.Errorf("reading the audit checkpoints: %w", err)
	}
	prev := ""
	for i := range cps {
		c := cps[i]
		digest := NewHeadsDigest()
		after := ""
		for {
			heads, err := l.CheckpointHeads(ctx, c.ID, after, auditPage)
			if err != nil {
				return cps[:i], nil, "", fmt.Errorf("reading checkpoint %d's heads: %w", c.ID, err)
			}
			for _, h := range heads {
				digest.Add(h)
			}
			if len(heads) < auditPage {
				break
			}
			after = heads[len(heads)-1].RequestID
		}
		switch {
		case c.PrevHash != prev:
			return cps[:i], &c, fmt.Sprintf("it chains to %.12s, where the checkpoint before it has hash %.12s: a checkpoint was removed, added or moved", c.PrevHash, prev), nil
		case CheckpointHash(c, digest.Sum()) != c.Hash:
			return cps[:i], &c, "its hash does not match its contents or its heads: it was edited", nil
		}
		prev = c.Hash
	}
	return cps, nil, "", nil
}
