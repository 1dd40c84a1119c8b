package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store"
)

const approveUsage = `usage: countersign approve [--as local:NAME] REF

Approves a request as a local reviewer, through the serve that runs on this
machine's data directory (COUNTERSIGN_DATA_DIR): over a Unix socket there,
never the network. REF is the request's id, its key, or a prefix of its
key (at least 8 characters after wa_). Prints one line saying what was
recorded; a refusal exits 1 with its code and words (already_decided,
not_approver, ...).

--as is the local: reviewer to decide as (default: the only one the
configuration names, else COUNTERSIGN_INBOX_REVIEWER, else local:reviewer);
a tool must name it among its approvers. A
configuration whose tools name no local: reviewer is refused, as is any
PostgreSQL deployment (COUNTERSIGN_DATABASE_URL) unless its configuration
names one.
`

const rejectUsage = `usage: countersign reject [--as local:NAME] [--reason TEXT] REF

Rejects a request as a local reviewer, as countersign approve approves one
(see approve --help). --reason is told to the agent; a tool with
reject_reason: required needs one, and one with reject_reason: off drops it.
`

// localReviewTimeout bounds one local review, connection included.
const localReviewTimeout = 30 * time.Second

// localReviewOptions are approve's and reject's arguments.
type localReviewOptions struct {
	verdict store.Verdict
	ref     string
	reason  string
	as      string
	effect  json.RawMessage // an edit's
}

func parseLocalReviewArgs(verdict store.Verdict, args []string, stdout, stderr io.Writer) (opts localReviewOptions, code int, ok bool) {
	name, usage := "approve", approveUsage
	if verdict == store.VerdictReject {
		name, usage = "reject", rejectUsage
	}
	opts.verdict = verdict
	// Defined with the values so far: the second parse, of what follows
	// REF, keeps what the first read.
	define := func(fs *flag.FlagSet) {
		fs.StringVar(&opts.as, "as", opts.as, "")
		if verdict == store.VerdictReject {
			fs.StringVar(&opts.reason, "reason", opts.reason, "")
		}
	}
	rest, code, ok := parseArgs(name, usage, args, 1<<10, define, stdout, stderr)
	if !ok {
		return opts, code, false
	}
	if len(rest) == 0 {
		fmt.Fprintf(stderr, "countersign %s: name the request: its id, key or key prefix\n\n%s", name, usage)
		return opts, 2, false
	}
	opts.ref = rest[0]
	// Flags may follow REF too: `reject REF --reason "…"`.
	if _, code, ok := parseArgs(name, usage, rest[1:], 0, define, stdout, stderr); !ok {
		return opts, code, false
	}
	return opts, 0, true
}

// localReview sends opts to the serve running on the data directory and
// prints what it recorded. A refusal, serve's or the configuration's, is
// the error, so the command exits 1 with it.
func localReview(ctx context.Context, opts localReviewOptions, getenv func(string) string, stdout io.Writer) error {
	loaded, err := config.Load(getenv)
	if err != nil {
		return err
	}
	effective := loaded
	if loaded.Local() {
		// The local run's demo tool: only its approvers matter here.
		effective = withLocal(loaded, "http://127.0.0.1:0", "")
	}
	reviewers := localReviewers(effective)
	switch {
	case len(reviewers) == 0 && loaded.DatabaseURL != "":
		return errors.New("COUNTERSIGN_DATABASE_URL points at PostgreSQL and the configuration names no local: reviewer: decisions there are made in Slack or the inbox, never from this command")
	case len(reviewers) == 0:
		return errors.New("no tool of the configuration names a local: reviewer among its approvers, so there is nobody to decide as here")
	}
	if opts.as == "" {
		opts.as = loaded.InboxReviewer
		if len(reviewers) == 1 {
			opts.as = reviewers[0] // the only one there is
		}
	}
	if !slices.Contains(reviewers, opts.as) {
		return fmt.Errorf("not_approver: %s is not an approver of any tool; the configuration's local reviewers are %s. Nothing was recorded",
			opts.as, strings.Join(reviewers, ", "))
	}
	dir := localReviewDir(loaded, getenv)
	if dir == "" {
		return errors.New("COUNTERSIGN_DATA_DIR is not set: on PostgreSQL with a configuration file, set it, for serve and for this command, to the directory whose socket serve takes local reviews on")
	}
	ans, err := askServe(ctx, filepath.Join(dir, localReviewSocket), localReviewAsk{
		Ref: opts.ref, Verdict: opts.verdict, Reason: opts.reason, As: opts.as, Effect: opts.effect,
	})
	if err != nil {
		return err
	}
	if ans.Code != "" {
		return fmt.Errorf("%s: %s", ans.Code, ans.Message)
	}
	fmt.Fprintln(stdout, ans.Line)
	return nil
}

// askServe posts ask on serve's local review socket at path.
func askServe(ctx context.Context, path string, ask localReviewAsk) (localReviewAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, localReviewTimeout)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}
	body, err := json.Marshal(ask)
	if err != nil {
		return localReviewAnswer{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://countersign"+localReviewPath, bytes.NewReader(body))
	if err != nil {
		return localReviewAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return localReviewAnswer{}, fmt.Errorf("no serve answers on %s: start countersign serve with this data directory, then decide again. Nothing was recorded", path)
		}
		return localReviewAnswer{}, fmt.Errorf("asking serve on %s: %w", path, err)
	}
	defer resp.Body.Close()
	var ans localReviewAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&ans); err != nil || (ans.Line == "" && ans.Code == "") {
		return localReviewAnswer{}, fmt.Errorf("serve's answer on %s could not be read (HTTP %d)", path, resp.StatusCode)
	}
	return ans, nil
}
