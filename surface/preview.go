package surface

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/outbound"
	"github.com/countersign/countersign/internal/strictjson"
	"github.com/countersign/countersign/store"
)

// Bounds of a preview's answer (docs/CONSOLE.md, "What changes"): anything
// past them is a failed preview, and the cards say it is unavailable.
const (
	MaxPreviewBody    = 64 << 10
	MaxPreviewChanges = 100
	maxPreviewField   = 200  // characters of a changed field's name
	maxPreviewSummary = 2000 // characters of a summary
	// previewGrace is how long past its timeout a card waits for the
	// preview to be recorded (a database write), so that a preview that
	// answered in time is shown.
	previewGrace = 250 * time.Millisecond
	// previewStaleAfter is how long past its timeout a fetch still
	// counts as live on another replica; after it, the fetch is taken
	// over (its fetcher died).
	previewStaleAfter = 5 * time.Second
	previewPoll       = 50 * time.Millisecond
)

// PreviewFetcher asks a tool's preview endpoint; the HTTP call is an
// adapter's (package previewhttp), as the port imports no net/http.
type PreviewFetcher interface {
	// FetchPreview POSTs body to ep.URL, signed as a dispatch of req is
	// (Countersign-Signature with ep.Secrets, Idempotency-Key req.Key),
	// and returns the answer's status and at most limit+1 bytes of its
	// body. ctx bounds the call.
	FetchPreview(ctx context.Context, ep approvals.PreviewEndpoint, req store.Request, body []byte, limit int64) (status int, answer []byte, err error)
}

// PreviewLedger is what previews are claimed, recorded and read in (a
// store.Store).
type PreviewLedger interface {
	ClaimPreview(ctx context.Context, p store.ClaimPreviewParams) (bool, error)
	RecordPreview(ctx context.Context, p store.Preview) (bool, error)
	PreviewFor(ctx context.Context, requestID string) (store.Preview, error)
}

// PreviewBody is what a preview endpoint is sent: the write's tool, key
// and effect (the snapshot's bytes, as a dispatch sends them). Wrapped, it
// cannot pass for a dispatch of the effect.
func PreviewBody(req store.Request) ([]byte, error) {
	return json.Marshal(struct {
		Tool   string          `json:"tool"`
		Key    string          `json:"key"`
		Effect json.RawMessage `json:"effect"`
	}{req.Tool, req.Key, req.Snapshot})
}

// ParsePreview reads a preview endpoint's answer (status, body, or the
// call's error) into a ready preview, or a failed one saying why.
func ParsePreview(status int, body []byte, err error) store.Preview {
	fail := func(format string, args ...any) store.Preview {
		return store.Preview{State: store.PreviewFailed, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case err != nil:
		return fail("the preview endpoint did not answer: %s", outbound.Describe(err))
	case status < 200 || status > 299:
		return fail("the preview endpoint answered %d", status)
	case len(body) > MaxPreviewBody:
		return fail("the answer is larger than %d KiB", MaxPreviewBody>>10)
	}
	if err := strictjson.Check(body); err != nil {
		return fail("the answer is not JSON: %s", err)
	}
	if at, _, found := strictjson.FindNUL(body, ""); found {
		return fail("the answer holds U+0000 at %s", orRoot(at))
	}
	var answer struct {
		Changes *[]struct {
			Field  *string          `json:"field"`
			Before *json.RawMessage `json:"before"`
			After  *json.RawMessage `json:"after"`
		} `json:"changes"`
		Summary *string `json:"summary"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&answer); err != nil {
		return fail("the answer is not {\"changes\": [...]} or {\"summary\": \"...\"}: %s", err)
	}
	switch {
	case answer.Changes != nil && answer.Summary != nil:
		return fail("the answer has both changes and a summary")
	case answer.Summary != nil:
		s := strings.TrimSpace(*answer.Summary)
		if s == "" || utf8.RuneCountInString(s) > maxPreviewSummary {
			return fail("the summary must be 1 to %d characters", maxPreviewSummary)
		}
		return store.Preview{State: store.PreviewReady, Summary: s}
	case answer.Changes == nil:
		return fail("the answer has neither changes nor a summary")
	case len(*answer.Changes) > MaxPreviewChanges:
		return fail("the answer lists %d changes, more than %d", len(*answer.Changes), MaxPreviewChanges)
	}
	p := store.Preview{State: store.PreviewReady, Changes: []store.PreviewChange{}}
	for i, c := range *answer.Changes {
		if c.Field == nil || *c.Field == "" || utf8.RuneCountInString(*c.Field) > maxPreviewField {
			return fail("change %d: field must be 1 to %d characters", i, maxPreviewField)
		}
		change := store.PreviewChange{Field: *c.Field, Before: json.RawMessage("null"), After: json.RawMessage("null")}
		if c.Before != nil {
			change.Before = compact(*c.Before)
		}
		if c.After != nil {
			change.After = compact(*c.After)
		}
		p.Changes = append(p.Changes, change)
	}
	return p
}

func orRoot(pointer string) string {
	if pointer == "" {
		return "/"
	}
	return pointer
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}
