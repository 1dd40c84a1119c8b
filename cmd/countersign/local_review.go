package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/identity"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store"
)

// Local reviews: `countersign approve` and `countersign reject` decide as a
// local: reviewer through serve itself, over a Unix socket in the data
// directory, never a network route. Serve owns the store (the embedded one
// is one process's) and wakes the agent's long-poll and the executor at
// once, as an inbox click does.
const (
	// localReviewSocket is the socket's file name in the data directory;
	// it is readable and writable by its owner only, like the store.
	localReviewSocket = "countersign.sock"
	// localReviewVia is what decisions made this way record as their channel.
	localReviewVia = "cli"
	// localReviewPath is the one route the socket serves.
	localReviewPath = "/local/decide"
)

// localReviewAsk is what the command sends: the request (an id, a key or
// a key prefix), the verdict, the reason of a reject, and the local:
// reviewer it decides as.
type localReviewAsk struct {
	Ref     string        `json:"ref"`
	Verdict store.Verdict `json:"verdict"`
	Reason  string        `json:"reason,omitempty"`
	As      string        `json:"as"`
	// Effect is the edited effect of an edit (verdictEdit).
	Effect json.RawMessage `json:"effect,omitempty"`
}

// localReviewAnswer is serve's answer: Line says what was recorded, or
// Code and Message are the refusal (approvals.RefusalFor).
type localReviewAnswer struct {
	Line    string `json:"line,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// localReviewers lists the local: identities cfg's tools name as
// approvers, in their tiers, or in escalate_to when it adds approvers.
func localReviewers(cfg *config.Config) []string {
	var out []string
	add := func(ids []string) {
		for _, s := range ids {
			if id, err := identity.ParsePerson(s); err == nil && id.Scheme == identity.Local && !slices.Contains(out, id.String()) {
				out = append(out, id.String())
			}
		}
	}
	for _, t := range cfg.File.Tools {
		add(t.Approvers)
		for _, tier := range t.Tiers {
			add(tier.Approvers)
		}
		if t.EscalateAddsApprovers {
			add(t.EscalateTo)
		}
	}
	slices.Sort(out)
	return out
}

// localReviewDir is the data directory the socket lives in: the
// store's or the local run's, else, on PostgreSQL with a configuration
// file, COUNTERSIGN_DATA_DIR when it is set, and "" when it is not: such a
// deployment has no data directory of its own to open a door in.
func localReviewDir(cfg *config.Config, getenv func(string) string) string {
	if cfg.DataDir != "" {
		return cfg.DataDir
	}
	return getenv("COUNTERSIGN_DATA_DIR")
}

// localReviews serves local reviews on the socket while serve runs.
type localReviews struct {
	review *approvals.Service
	db     store.Store
	logger *slog.Logger
	path   string
	server *http.Server
	ln     net.Listener
	done   chan struct{}
}

// addLocalReviews listens on the data directory's socket when the
// configuration names a local reviewer; without one there is nobody to
// decide as, and no socket.
func (a *app) addLocalReviews(getenv func(string) string) error {
	if len(localReviewers(a.cfg)) == 0 {
		return nil
	}
	dir := localReviewDir(a.cfg, getenv)
	if dir == "" {
		a.logger.Info("local reviews are off: set COUNTERSIGN_DATA_DIR for serve's socket, on PostgreSQL with a configuration file")
		return nil
	}
	if err := makeDataDir(dir); err != nil {
		return err
	}
	l := &localReviews{review: a.review, db: a.db, logger: a.logger.With("component", "local reviews"),
		path: filepath.Join(dir, localReviewSocket), done: make(chan struct{})}
	l.server = &http.Server{Handler: l, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	a.add("local review socket", l, httpShutdownTimeout)
	return nil
}

// Start listens on the socket, replacing one a serve that was killed left
// behind, but never one another serve still answers on: that serve keeps
// taking the local reviews, and this one runs without.
func (l *localReviews) Start(context.Context) error {
	if c, err := net.DialTimeout("unix", l.path, time.Second); err == nil {
		c.Close()
		l.logger.Warn("another serve takes local reviews on this data directory's socket; this one does not", slog.String("socket", l.path))
		return nil
	}
	// Local reviews are a convenience: serve runs without them rather
	// than not at all (a data directory's path may be too long for a
	// socket's, at about 100 bytes).
	off := func(err error) error {
		l.logger.Warn("local reviews are off: countersign approve and reject cannot reach this serve",
			slog.String("socket", l.path), slog.String("error", err.Error()))
		return nil
	}
	if err := os.Remove(l.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return off(err)
	}
	ln, err := net.Listen("unix", l.path)
	if err != nil {
		return off(err)
	}
	// The directory is its owner's only already; the socket says so too.
	if err := os.Chmod(l.path, 0o600); err != nil {
		ln.Close()
		return off(err)
	}
	l.ln = ln
	go func() {
		defer close(l.done)
		if err := l.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			l.logger.Error("local review socket stopped", slog.String("error", err.Error()))
		}
	}()
	l.logger.Info("local reviews listening", slog.String("socket", l.path))
	return nil
}

// Stop stops taking decisions and removes the socket.
func (l *localReviews) Stop(ctx context.Context) error {
	if l.ln == nil {
		return nil
	}
	err := l.server.Shutdown(ctx)
	<-l.done
	return err
}

func (l *localReviews) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != localReviewPath {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var ask localReviewAsk
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&ask); err != nil {
		l.answer(w, localReviewAnswer{Code: approvals.CodeMalformedJSON, Message: "The local review could not be read."})
		return
	}
	l.answer(w, l.decide(r.Context(), ask))
}

func (l *localReviews) answer(w http.ResponseWriter, a localReviewAnswer) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(a)
}

// decide finds the request ask names and casts the local reviewer's vote
// on its current round, through the same Decide as every other surface.
func (l *localReviews) decide(ctx context.Context, ask localReviewAsk) localReviewAnswer {
	id, err := identity.ParsePerson(ask.As)
	if err != nil || id.Scheme != identity.Local {
		return localReviewAnswer{Code: approvals.CodeNotApprover,
			Message: fmt.Sprintf("%q is not a local reviewer: decisions through the data directory are made as local:NAME. Nothing was recorded.", ask.As)}
	}
	if ask.Verdict == verdictEdit {
		return l.edit(ctx, id, ask)
	}
	if ask.Verdict != store.VerdictApprove && ask.Verdict != store.VerdictReject {
		return localReviewAnswer{Code: approvals.CodeInvalidRequest, Message: "The verdict must be approve or reject."}
	}
	req, refusal := l.resolve(ctx, ask.Ref)
	if refusal != nil {
		return *refusal
	}
	out, err := l.review.Decide(ctx, approvals.Decision{
		RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash,
		Verdict: ask.Verdict, DecidedBy: id.String(), Via: localReviewVia, Reason: ask.Reason,
	})
	if err == nil {
		err = out.Err()
	}
	if err != nil {
		ref := approvals.RefusalFor(err)
		if ref.Code == approvals.CodeInternal {
			l.logger.Error("local review failed", slog.String("key", req.Key), slog.String("error", err.Error()))
		}
		return localReviewAnswer{Code: ref.Code, Message: ref.Message}
	}
	what := fmt.Sprintf("%s (%s, key %s)", req.ID, req.Tool, approvals.ShortKey(req.Key))
	switch {
	case out.Repeat:
		return localReviewAnswer{Line: fmt.Sprintf("%s had already voted on %s; nothing changed", id, what)}
	case out.Counted:
		return localReviewAnswer{Line: fmt.Sprintf("%s approved %s: %s", id, what, out.Progress())}
	case ask.Verdict == store.VerdictReject && out.Decision.Reason != "":
		return localReviewAnswer{Line: fmt.Sprintf("rejected %s as %s: %s", what, id, out.Decision.Reason)}
	case ask.Verdict == store.VerdictReject:
		return localReviewAnswer{Line: fmt.Sprintf("rejected %s as %s", what, id)}
	}
	return localReviewAnswer{Line: fmt.Sprintf("approved %s as %s", what, id)}
}

// resolve finds the one request ref names: its id, its key (or a client's
// key), or a key prefix of at least 8 characters after wa_, with or
// without wa_. A business id in the effect names nothing here: a decision
// needs the request itself.
func (l *localReviews) resolve(ctx context.Context, ref string) (store.Request, *localReviewAnswer) {
	notFound := &localReviewAnswer{Code: approvals.CodeNotFound,
		Message: fmt.Sprintf("No request has the id, key or key prefix %q.", ref)}
	q, ans, err := lookup.Find(ctx, l.db, ref)
	if err != nil {
		ref := approvals.RefusalFor(err)
		return store.Request{}, &localReviewAnswer{Code: ref.Code, Message: ref.Message}
	}
	switch ans.Kind {
	case lookup.AnswerDetail:
		req := ans.Detail.Request
		if named(q, ref, req) {
			return req, nil
		}
	case lookup.AnswerMatches:
		if ans.Match != lookup.MatchKeyPrefix {
			break
		}
		keys := make([]string, 0, len(ans.Requests))
		for _, r := range ans.Requests {
			keys = append(keys, approvals.ShortKey(r.Key))
		}
		more := ""
		if ans.More {
			more = ", and more"
		}
		return store.Request{}, &localReviewAnswer{Code: approvals.CodeInvalidRequest,
			Message: fmt.Sprintf("%q is the start of several keys (%s%s): give more of it. Nothing was recorded.", ref, strings.Join(keys, ", "), more)}
	}
	return store.Request{}, notFound
}

// named reports whether the request a lookup found is the one ref names
// itself, not one whose effect happens to hold ref.
func named(q lookup.Query, ref string, req store.Request) bool {
	switch q.Kind {
	case lookup.QueryID:
		return req.ID == q.Value
	case lookup.QueryKey:
		return strings.HasPrefix(req.Key, q.Value)
	case lookup.QueryHexPrefix:
		return strings.HasPrefix(req.Key, "wa_"+strings.ToLower(q.Value)) || req.Key == strings.TrimSpace(ref)
	case lookup.QueryBusiness:
		return req.Key == strings.TrimSpace(ref)
	}
	return false
}
