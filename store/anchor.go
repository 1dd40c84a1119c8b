package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
)

// An anchor is what a chain alone cannot prove kept outside the database:
// where every request's chain ended when it was taken (its head: the last
// event's number and hash) and the newest checkpoint of dropped months,
// summed into one digest. An owner who edits an event and computes the
// chain again changes its head's hash; one who deletes a request's last
// events, or all of them, removes the number the anchor holds. Verified
// against an anchor (VerifyAuditAnchor), each head must still be in its
// chain with the same hash, or have left with a month a checkpoint records.

// AuditHead is where one request's chain ended when an anchor was taken:
// its last event's number and hash.
type AuditHead struct {
	RequestID string
	Seq       int
	Hash      string
}

// CheckpointRef names a checkpoint by its id and hash; ID 0 is none.
type CheckpointRef struct {
	ID   int64
	Hash string
}

// AuditAnchor is an anchor's summary (AnchorAudit): how many request chains
// and events it covers, the newest checkpoint when it was taken, and its
// digest (AnchorDigest) over that checkpoint and every head.
type AuditAnchor struct {
	Requests, Events int
	Checkpoint       CheckpointRef
	Digest           string
}

// AnchorDigestVersion is the first line of every anchor digest: it changes
// only with the digest's form.
const AnchorDigestVersion = "countersign audit anchor 1"

// AnchorDigest sums an anchor: the hex SHA-256 of its lines, each ending in
// a newline: AnchorDigestVersion, then "REQUEST SEQ HASH" for each head in
// request id order, then "checkpoint ID HASH" for the newest checkpoint of
// dropped months ("checkpoint none" when no month was dropped).
type AnchorDigest struct {
	h     hash.Hash
	heads int
}

// NewAnchorDigest starts the digest of an anchor.
func NewAnchorDigest() *AnchorDigest {
	d := &AnchorDigest{h: sha256.New()}
	d.line(AnchorDigestVersion)
	return d
}

func (d *AnchorDigest) line(s string) {
	d.h.Write([]byte(s))
	d.h.Write([]byte{'\n'})
}

// Add adds the next head.
func (d *AnchorDigest) Add(h AuditHead) {
	d.heads++
	d.line(h.RequestID + " " + strconv.Itoa(h.Seq) + " " + h.Hash)
}

// Heads is how many heads were added.
func (d *AnchorDigest) Heads() int { return d.heads }

// Sum adds the checkpoint's line after the heads and returns the digest;
// call it once, after the last head.
func (d *AnchorDigest) Sum(cp CheckpointRef) string {
	if cp.ID == 0 {
		d.line("checkpoint none")
	} else {
		d.line("checkpoint " + strconv.FormatInt(cp.ID, 10) + " " + cp.Hash)
	}
	return hex.EncodeToString(d.h.Sum(nil))
}

// AnchorAudit walks the trail as VerifyAudit does and hands emit the head
// of each request's chain, in request id order (the chains' order), as the
// walk passes it; it returns the anchor's summary. An anchor holds only
// what verified: when the walk names a checkpoint or an event (the
// report's BadCheckpoint or Bad), there is no anchor, and whatever emit
// was given must be thrown away.
func (l *Ledger) AnchorAudit(ctx context.Context, emit func(AuditHead) error) (AuditAnchor, AuditReport, error) {
	w := &anchorWalk{emit: emit}
	r, _, err := l.walkAudit(ctx, w)
	if err != nil || r.Bad != nil || r.BadCheckpoint != nil {
		return AuditAnchor{}, r, err
	}
	return AuditAnchor{Requests: w.digest.Heads(), Events: r.Events, Checkpoint: w.cp, Digest: w.digest.Sum(w.cp)}, r, nil
}

// anchorWalk collects the heads of an anchor.
type anchorWalk struct {
	emit   func(AuditHead) error
	cp     CheckpointRef
	digest *AnchorDigest
}

func (w *anchorWalk) checkpoints(_ context.Context, cps []AuditCheckpoint) error {
	if n := len(cps); n > 0 {
		w.cp = CheckpointRef{ID: cps[n-1].ID, Hash: cps[n-1].Hash}
	}
	w.digest = NewAnchorDigest()
	return nil
}

func (*anchorWalk) event(context.Context, AuditEvent) error { return nil }

func (w *anchorWalk) chainEnd(_ context.Context, last AuditEvent) error {
	h := AuditHead{RequestID: last.RequestID, Seq: last.Seq, Hash: last.Hash}
	w.digest.Add(h)
	return w.emit(h)
}

// Anchor is an anchor as VerifyAuditAnchor reads it: the checkpoint it
// names, and Next giving its heads one at a time in request id order (ok
// false after the last). Its digest has been checked by whoever read it.
type Anchor struct {
	Checkpoint CheckpointRef
	Next       func() (head AuditHead, ok bool, err error)
}

// AnchorMismatch is an anchored head its chain no longer holds as the
// anchor does, with how.
type AnchorMismatch struct {
	Head    AuditHead
	Problem string
}

// MaxAnchorMismatches is how many mismatches a report lists; it counts
// them all.
const MaxAnchorMismatches = 100

// VerifyAuditAnchor verifies the trail as VerifyAudit does and holds it to
// an anchor taken before: the checkpoint the anchor names must still be
// there with its hash, and each head it holds must still be in its chain,
// at its number with its hash (events written since are fine), or have
// left with a month dropped since, whose checkpoint holds that request's
// head at or after it (with the same hash when at it). Pruning a request
// leaves its events, so a pruned request's head is still in its chain. The
// report counts the heads found (Anchored) and those that left with a
// month (AnchorDropped), and lists the others (AnchorMismatches), naming
// each request. The walk stops at the first checkpoint or event that does
// not verify, as VerifyAudit's does; the anchor's heads after it are then
// not checked.
func (l *Ledger) VerifyAuditAnchor(ctx context.Context, a Anchor) (AuditReport, error) {
	c := &anchorCheck{l: l, anchor: a}
	if err := c.advance(); err != nil {
		return AuditReport{}, err
	}
	r, _, err := l.walkAudit(ctx, c)
	if err != nil || r.Bad != nil || r.BadCheckpoint != nil {
		c.report(&r)
		return r, err
	}
	// The heads of requests after the last chain have no events left.
	for c.more {
		if err := c.gone(ctx, 0); err != nil {
			return r, err
		}
	}
	c.report(&r)
	return r, nil
}

// anchorCheck holds a walk of the chains to an anchor: the chains and the
// anchor's heads are both in request id order, so it checks each head as
// the walk passes its request.
type anchorCheck struct {
	l      *Ledger
	anchor Anchor
	head   AuditHead // the next head to check, when more
	more   bool

	checkpoint        string
	anchored, dropped int
	mismatches        []AnchorMismatch
	mismatchesCount   int
}

func (c *anchorCheck) advance() (err error) {
	c.head, c.more, err = c.anchor.Next()
	if err != nil {
		return fmt.Errorf("reading the anchor: %w", err)
	}
	return nil
}

func (c *anchorCheck) mismatch(problem string) error {
	c.mismatchesCount++
	if len(c.mismatches) < MaxAnchorMismatches {
		c.mismatches = append(c.mismatches, AnchorMismatch{Head: c.head, Problem: problem})
	}
	return c.advance()
}

func (c *anchorCheck) report(r *AuditReport) {
	r.AnchorCheckpoint = c.checkpoint
	r.Anchored, r.AnchorDropped = c.anchored, c.dropped
	r.AnchorMismatches, r.AnchorMismatchCount = c.mismatches, c.mismatchesCount
}

func (c *anchorCheck) checkpoints(_ context.Context, cps []AuditCheckpoint) error {
	want := c.anchor.Checkpoint
	if want.ID == 0 {
		return nil
	}
	for _, cp := range cps {
		if cp.ID != want.ID {
			continue
		}
		if cp.Hash != want.Hash {
			c.checkpoint = fmt.Sprintf("checkpoint %d has hash %.12s, where the anchor holds %.12s: it, or one before it, was changed and the checkpoints' chain computed again", cp.ID, cp.Hash, want.Hash)
		}
		return nil
	}
	c.checkpoint = fmt.Sprintf("checkpoint %d, the newest when the anchor was taken, is gone: checkpoints were removed", want.ID)
	return nil
}

func (c *anchorCheck) event(ctx context.Context, e AuditEvent) error {
	// Heads of requests before this one: none of their events are left.
	for c.more && c.head.RequestID < e.RequestID {
		if err := c.gone(ctx, 0); err != nil {
			return err
		}
	}
	if !c.more || c.head.RequestID != e.RequestID {
		return nil
	}
	switch {
	case c.head.Seq < e.Seq:
		// Only at the chain's first event left: the anchored one is
		// before it.
		return c.gone(ctx, e.Seq)
	case c.head.Seq == e.Seq:
		if e.Hash != c.head.Hash {
			return c.mismatch(fmt.Sprintf("its event number %d has hash %.12s, where the anchor holds %.12s: that event, or one before it, was changed and the chain computed again", e.Seq, e.Hash, c.head.Hash))
		}
		c.anchored++
		return c.advance()
	}
	return nil
}

func (c *anchorCheck) chainEnd(_ context.Context, last AuditEvent) error {
	if c.more && c.head.RequestID == last.RequestID {
		return c.mismatch(fmt.Sprintf("its chain ends at number %d, where the anchor holds number %d: its last events were removed", last.Seq, c.head.Seq))
	}
	return nil
}

// gone checks the head whose event is no longer in the events: it may have
// left only with a dropped month, whose checkpoint then holds the chain's
// head at or after it. first is the number of the chain's first event left
// (0: none is).
func (c *anchorCheck) gone(ctx context.Context, first int) error {
	h, found, err := c.l.CheckpointHeadFrom(ctx, c.head.RequestID, c.head.Seq)
	if err != nil {
		return fmt.Errorf("reading the audit checkpoints: %w", err)
	}
	switch {
	case found && h.Seq == c.head.Seq && h.Hash != c.head.Hash:
		return c.mismatch(fmt.Sprintf("its event number %d left with a dropped month whose checkpoint holds it with hash %.12s, where the anchor holds %.12s: it was changed before the month was dropped", h.Seq, h.Hash, c.head.Hash))
	case found:
		c.dropped++
		return c.advance()
	case first == 0:
		return c.mismatch(fmt.Sprintf("none of its events is left and no checkpoint of a dropped month holds number %d: its events were removed", c.head.Seq))
	default:
		return c.mismatch(fmt.Sprintf("its chain starts at number %d and no checkpoint of a dropped month holds number %d: its events up to it were removed", first, c.head.Seq))
	}
}
