package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/identity"
	"github.com/countersign/countersign/store"
)

const editUsage = `usage: countersign edit [--as local:NAME] --effect JSON REF

Approves a pending request with its effect changed, as a local reviewer,
through the serve that runs on this machine's data directory, as
countersign approve approves one (see approve --help). JSON is the whole
edited effect, a JSON object; it must pass the tool's effect schema. The
edit becomes a new request with its own key, derived from the edited effect,
re-tiered by policy (it can need more approvals, never fewer) and approved
by this reviewer; the original settles as edited and never runs. Prints one
line naming both keys; a refusal exits 1 with its code and words.
`

// verdictEdit is what the edit command asks serve's local review socket for:
// an approval of the edited effect, not a vote of store.Verdict's.
const verdictEdit store.Verdict = "edit"

// maxEditEffect bounds the edited effect given on the command line, as the
// socket bounds the whole ask.
const maxEditEffect = 48 << 10

func parseEditArgs(args []string, stdout, stderr io.Writer) (opts localReviewOptions, code int, ok bool) {
	opts.verdict = verdictEdit
	var effect string
	define := func(fs *flag.FlagSet) {
		fs.StringVar(&opts.as, "as", opts.as, "")
		fs.StringVar(&effect, "effect", effect, "")
	}
	rest, code, ok := parseArgs("edit", editUsage, args, 1<<10, define, stdout, stderr)
	if !ok {
		return opts, code, false
	}
	if len(rest) == 0 {
		fmt.Fprintf(stderr, "countersign edit: name the request: its id, key or key prefix\n\n%s", editUsage)
		return opts, 2, false
	}
	opts.ref = rest[0]
	if _, code, ok := parseArgs("edit", editUsage, rest[1:], 0, define, stdout, stderr); !ok {
		return opts, code, false
	}
	raw := bytes.TrimSpace([]byte(effect))
	var obj map[string]json.RawMessage
	switch {
	case len(raw) == 0:
		fmt.Fprintf(stderr, "countersign edit: give the edited effect with --effect JSON\n\n%s", editUsage)
		return opts, 2, false
	case len(raw) > maxEditEffect:
		fmt.Fprintf(stderr, "countersign edit: the edited effect is over %d bytes\n", maxEditEffect)
		return opts, 2, false
	case json.Unmarshal(raw, &obj) != nil || obj == nil:
		fmt.Fprintf(stderr, "countersign edit: --effect must be a JSON object\n\n%s", editUsage)
		return opts, 2, false
	}
	opts.effect = json.RawMessage(raw)
	return opts, 0, true
}

// edit approves the request ask names with its effect replaced by
// ask.Effect, through the same ApproveWithEdit as the console, as the local
// reviewer id.
func (l *localReviews) edit(ctx context.Context, id identity.ID, ask localReviewAsk) localReviewAnswer {
	req, refusal := l.resolve(ctx, ask.Ref)
	if refusal != nil {
		return *refusal
	}
	out, err := l.review.ApproveWithEdit(ctx, approvals.Edit{
		RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash,
		Effect: ask.Effect, EditedBy: id.String(), Via: localReviewVia,
	})
	if err != nil {
		ref := approvals.RefusalFor(err)
		if ref.Code == approvals.CodeInternal {
			l.logger.Error("local edit failed", slog.String("key", req.Key), slog.String("error", err.Error()))
		}
		return localReviewAnswer{Code: ref.Code, Message: ref.Message}
	}
	line := fmt.Sprintf("edited %s (%s, key %s) as %s: changed %s; the edit is %s (key %s)",
		req.ID, req.Tool, approvals.ShortKey(req.Key), id, strings.Join(out.Changed, ", "),
		out.Edit.ID, out.Edit.Key)
	if out.Approved {
		return localReviewAnswer{Line: line + ", approved"}
	}
	return localReviewAnswer{Line: line + ", pending: " + out.Progress()}
}
