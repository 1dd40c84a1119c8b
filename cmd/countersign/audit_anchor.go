package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/store"
)

// An anchor file is JSON Lines: one object a line, each line ending in a
// newline. Every line but the last is the head of one request's chain,
//
//	{"request":"…","seq":7,"hash":"…"}
//
// in request id order; the last is the summary (anchorSummary), the one
// line to publish:
//
//	{"anchor":"countersign-audit-anchor/1","at":"…","requests":2,"events":9,"checkpoint":null,"digest":"…"}
//
// digest is store.AnchorDigest over the checkpoint and the heads. A file
// whose name ends in .gz is written gzip-compressed; one that starts as
// gzip does is read so, whatever its name.

// anchorFormat names the anchor file's form; it changes only with it.
const anchorFormat = "countersign-audit-anchor/1"

// anchorSummary is an anchor file's last line: what audit anchor prints
// and serve logs.
type anchorSummary struct {
	Anchor   string    `json:"anchor"`
	At       time.Time `json:"at"`
	Requests int       `json:"requests"`
	Events   int       `json:"events"`
	// Checkpoint is the newest checkpoint of dropped months when the
	// anchor was taken; null when none was.
	Checkpoint *anchorCheckpoint `json:"checkpoint"`
	Digest     string            `json:"digest"`
}

type anchorCheckpoint struct {
	ID   int64  `json:"id"`
	Hash string `json:"hash"`
}

// anchorHead is one line of an anchor file before its summary.
type anchorHead struct {
	Request string `json:"request"`
	Seq     int    `json:"seq"`
	Hash    string `json:"hash"`
}

// maxAnchorLine bounds a line of an anchor file: a head is about 120 bytes,
// the summary about 250.
const maxAnchorLine = 4096

func (s anchorSummary) checkpoint() store.CheckpointRef {
	if s.Checkpoint == nil {
		return store.CheckpointRef{}
	}
	return store.CheckpointRef{ID: s.Checkpoint.ID, Hash: s.Checkpoint.Hash}
}

// attrs are the summary as log attributes.
func (s anchorSummary) attrs() []any {
	attrs := []any{slog.Time("at", s.At), slog.Int("requests", s.Requests), slog.Int("events", s.Events), slog.String("digest", s.Digest)}
	if s.Checkpoint != nil {
		attrs = append(attrs, slog.Int64("checkpoint", s.Checkpoint.ID), slog.String("checkpoint_hash", s.Checkpoint.Hash))
	}
	return attrs
}

// writeAnchor verifies the audit trail and writes its anchor to w, a head
// a line as the walk passes it and the summary last. When the trail does
// not verify it returns the report naming where, and what w was given is
// no anchor (it has no summary line).
func writeAnchor(ctx context.Context, db store.Store, w io.Writer, now time.Time) (anchorSummary, store.AuditReport, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	a, r, err := db.AnchorAudit(ctx, func(h store.AuditHead) error {
		return enc.Encode(anchorHead{Request: h.RequestID, Seq: h.Seq, Hash: h.Hash})
	})
	if err != nil || r.Bad != nil || r.BadCheckpoint != nil {
		return anchorSummary{}, r, err
	}
	s := anchorSummary{Anchor: anchorFormat, At: now.UTC(), Requests: a.Requests, Events: a.Events, Digest: a.Digest}
	if a.Checkpoint.ID != 0 {
		s.Checkpoint = &anchorCheckpoint{ID: a.Checkpoint.ID, Hash: a.Checkpoint.Hash}
	}
	if err := enc.Encode(s); err != nil {
		return s, r, err
	}
	return s, r, bw.Flush()
}

// takeAnchor verifies the trail and writes its anchor to file, whole or
// not at all, or to w when no file is named. A trail that does not verify
// is told by the report, and leaves the file as it was.
func takeAnchor(ctx context.Context, db store.Store, file string, w io.Writer, now time.Time) (s anchorSummary, r store.AuditReport, err error) {
	if file == "" {
		return writeAnchor(ctx, db, w, now)
	}
	err = writeAnchorFile(file, func(w io.Writer) (bool, error) {
		var werr error
		s, r, werr = writeAnchor(ctx, db, w, now)
		return r.Bad == nil && r.BadCheckpoint == nil, werr
	})
	if errors.Is(err, errNoAnchor) {
		err = nil
	}
	return s, r, err
}

// writeAnchorFile writes an anchor to path as write gives it, atomically:
// to a new file (0600) beside it, renamed over path once complete and
// synced, so path holds the previous anchor or the new one, never a part.
// The rename replaces a symlink at path rather than writing where it
// points. A name ending in .gz is written gzip-compressed.
func writeAnchorFile(path string, write func(io.Writer) (bool, error)) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" {
		return fmt.Errorf("%q names a directory, not a file", path)
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp") // 0600, O_EXCL
	if err != nil {
		return fmt.Errorf("writing the anchor: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	var w io.Writer = f
	var gz *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		gz = gzip.NewWriter(f)
		w = gz
	}
	complete, err := write(w)
	if err != nil {
		return err
	}
	if !complete {
		return errNoAnchor
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			return fmt.Errorf("writing the anchor: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing the anchor: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the anchor: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing the anchor: %w", err)
	}
	if d, err := os.Open(dir); err == nil { // the rename itself, on disk
		d.Sync()
		d.Close()
	}
	return nil
}

// errNoAnchor is what writeAnchorFile's write says when the trail did not
// verify: the file is left as it was.
var errNoAnchor = errors.New("no anchor taken")

// readAnchorSummary reads the anchor at path through once and returns its
// summary: every line must be a head or, last, the summary; the heads in
// strictly increasing request id order, as many as the summary counts, and
// the summary's digest theirs and the checkpoint's.
func readAnchorSummary(path string) (anchorSummary, error) {
	r, err := openAnchor(path, "")
	if err != nil {
		return anchorSummary{}, err
	}
	defer r.Close()
	for {
		_, ok, err := r.next()
		if err != nil {
			return anchorSummary{}, err
		}
		if !ok {
			return *r.summary, nil
		}
	}
}

// anchorReader reads an anchor file's lines, checking each.
type anchorReader struct {
	path string
	// digest is the summary's digest read before; "" on a first read.
	digest  string
	f       *os.File
	lines   *bufio.Scanner
	n       int // lines read
	last    string
	sum     *store.AnchorDigest
	summary *anchorSummary
}

// openAnchor opens the anchor at path for a walk through its heads; digest
// is the one a first read found ("" on the first), which the summary must
// still hold when the walk reaches it.
func openAnchor(path, digest string) (*anchorReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the anchor: %w", err)
	}
	br := bufio.NewReader(f)
	var src io.Reader = br
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("reading the anchor %s: %w", path, err)
		}
		src = gz
	}
	lines := bufio.NewScanner(src)
	lines.Buffer(make([]byte, 0, maxAnchorLine), maxAnchorLine)
	return &anchorReader{path: path, digest: digest, f: f, lines: lines, sum: store.NewAnchorDigest()}, nil
}

func (r *anchorReader) Close() error { return r.f.Close() }

// next returns the next head; ok false once the summary was read (then
// r.summary holds it, checked).
func (r *anchorReader) next() (h store.AuditHead, ok bool, err error) {
	if r.summary != nil {
		return h, false, nil
	}
	if !r.lines.Scan() {
		err := r.lines.Err()
		if errors.Is(err, bufio.ErrTooLong) {
			r.n++
			return h, false, r.bad("is longer than %d bytes", maxAnchorLine)
		}
		if err != nil {
			return h, false, fmt.Errorf("reading the anchor %s: %w", r.path, err)
		}
		return h, false, fmt.Errorf("the anchor %s ends after %d lines without its summary line: it was cut short, or is no anchor", r.path, r.n)
	}
	r.n++
	var line struct {
		anchorHead
		anchorSummary
	}
	dec := json.NewDecoder(bytes.NewReader(r.lines.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&line); err != nil || dec.More() {
		return h, false, r.bad("is not one JSON object of a head or the summary")
	}
	s := line.anchorSummary
	if s.Anchor == "" {
		head := line.anchorHead
		switch {
		case !s.At.IsZero() || s.Requests != 0 || s.Events != 0 || s.Checkpoint != nil || s.Digest != "":
			return h, false, r.bad("mixes a head with the summary's fields")
		case !validRequestID(head.Request):
			return h, false, r.bad("names no request id (lowercase letters, digits and dashes, up to 64)")
		case head.Request <= r.last:
			return h, false, r.bad("is not after the line before in request id order")
		case head.Seq < 1:
			return h, false, r.bad("has no event number (seq of 1 or more)")
		case !isHexHash(head.Hash):
			return h, false, r.bad("has no hash (64 lowercase hex digits)")
		}
		r.last = head.Request
		h = store.AuditHead{RequestID: head.Request, Seq: head.Seq, Hash: head.Hash}
		r.sum.Add(h)
		return h, true, nil
	}
	switch {
	case line.anchorHead != (anchorHead{}):
		return h, false, r.bad("mixes the summary with a head's fields")
	case s.Anchor != anchorFormat:
		return h, false, r.bad("is an anchor of form %q; this countersign reads %q", s.Anchor, anchorFormat)
	case s.At.IsZero():
		return h, false, r.bad("has no time (at)")
	case s.Checkpoint != nil && (s.Checkpoint.ID < 1 || !isHexHash(s.Checkpoint.Hash)):
		return h, false, r.bad("names a checkpoint without its id and hash")
	case s.Requests != r.sum.Heads():
		return h, false, r.bad("counts %d requests, where the file holds %d heads", s.Requests, r.sum.Heads())
	case s.Events < s.Requests:
		return h, false, r.bad("counts fewer events than requests")
	case !isHexHash(s.Digest):
		return h, false, r.bad("has no digest (64 lowercase hex digits)")
	}
	if r.lines.Scan() || r.lines.Err() != nil {
		return h, false, fmt.Errorf("the anchor %s goes on after its summary at line %d", r.path, r.n)
	}
	if r.sum.Sum(s.checkpoint()) != s.Digest {
		return h, false, fmt.Errorf("the anchor %s does not match its digest %s: a head or the checkpoint was changed, added or removed since it was taken", r.path, s.Digest)
	}
	if r.digest != "" && s.Digest != r.digest {
		return h, false, fmt.Errorf("the anchor %s changed while it was read", r.path)
	}
	r.summary = &s
	return h, false, nil
}

func (r *anchorReader) bad(format string, args ...any) error {
	return fmt.Errorf("the anchor %s, line %d: the line %s", r.path, r.n, fmt.Sprintf(format, args...))
}

// validRequestID reports whether id can be a request id as the database
// holds it (a UUID in lowercase), and so a line of the digest.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || c == '-') {
			return false
		}
	}
	return true
}

// isHexHash reports whether s is a hex SHA-256 as the chains write them.
func isHexHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// auditAnchorer takes an anchor inside serve, on retention.anchor_schedule:
// to retention.anchor_file when set (replaced whole each time), else the
// summary to the log. Either way the summary is logged, for a log shipper
// to carry it where the database's owner cannot write.
type auditAnchorer struct {
	db     store.Store
	file   string
	logger *slog.Logger
	at     prometheus.Gauge
	now    func() time.Time
}

func newAuditAnchorer(db store.Store, file string, logger *slog.Logger, reg prometheus.Registerer) *auditAnchorer {
	a := &auditAnchorer{db: db, file: file, logger: logger, now: time.Now,
		at: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "countersign_audit_last_anchor_timestamp_seconds",
			Help: "When the last anchor of the audit trail was taken; none is while the trail does not verify.",
		}),
	}
	reg.MustRegister(a.at)
	return a
}

// runOnce verifies the audit trail and anchors it.
func (a *auditAnchorer) runOnce(ctx context.Context) error {
	var (
		s   anchorSummary
		r   store.AuditReport
		err error
	)
	now := a.now()
	s, r, err = takeAnchor(ctx, a.db, a.file, io.Discard, now)
	switch {
	case err != nil:
		return err
	case r.BadCheckpoint != nil:
		a.logger.Error("the audit trail does not verify: no anchor taken", slog.Int64("checkpoint", r.BadCheckpoint.ID),
			slog.String("problem", r.Problem))
		return nil
	case r.Bad != nil:
		a.logger.Error("the audit trail does not verify: no anchor taken", slog.Int64("event", r.Bad.ID),
			slog.String("request", r.Bad.RequestID), slog.String("problem", r.Problem))
		return nil
	}
	a.at.Set(float64(s.At.Unix()))
	attrs := s.attrs()
	if a.file != "" {
		attrs = append(attrs, slog.String("file", a.file))
	}
	a.logger.Info("audit anchor", attrs...)
	return nil
}
