package teamssurface

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/surface"
)

// Name is the surface's name in the ledger; Via is the one its decisions
// are recorded with.
const (
	Name = "teams"
	Via  = "teams"
)

// MessagesPath is where the Bot Framework sends activities (the bot's
// messaging endpoint).
const MessagesPath = "/teams/messages"

// Issuer is the issuer of the Bot Framework's tokens, and Scope the one
// the bot asks its own tokens for.
const (
	Issuer = "https://api.botframework.com"
	Scope  = "https://api.botframework.com/.default"
)

// Config is what a Teams needs.
type Config struct {
	AppID       string
	AppPassword string
	// OpenIDMetadata is the URL of the OpenID metadata naming the keys
	// incoming tokens are signed with; TokenURL where the bot gets its
	// own; ServiceURL the Bot Connector cards are posted to.
	OpenIDMetadata string
	TokenURL       string
	ServiceURL     string
	// Conversation is the conversation tool's cards go to; "" when none.
	Conversation func(tool string) string
	// Uses reports whether a tool's requests go to Teams; nil: every
	// tool's.
	Uses       func(tool string) bool
	Review     Reviewer
	Cards      surface.Cards
	HTTPClient *http.Client // nil: one with a 10s timeout
	Logger     *slog.Logger
	Now        func() time.Time // nil: time.Now
}

// Reviewer is what a click asks of review (approvals.Service).
type Reviewer interface {
	surface.Tools
	Decide(ctx context.Context, d approvals.Decision) (approvals.Outcome, error)
}

// Teams is the Teams surface: the adapter (Surface) and the messaging
// endpoint (Handler).
type Teams struct {
	cfg  Config
	http *http.Client
	log  *slog.Logger
	now  func() time.Time
	keys *keySet

	mu      sync.Mutex
	token   string
	expires time.Time
}

// New returns a Teams.
func New(cfg Config) (*Teams, error) {
	if cfg.AppID == "" || cfg.AppPassword == "" {
		return nil, errors.New("teams: the app id and password are required")
	}
	for _, u := range []string{cfg.OpenIDMetadata, cfg.TokenURL, cfg.ServiceURL} {
		if p, err := url.Parse(u); err != nil || p.Host == "" {
			return nil, fmt.Errorf("teams: %q is not a URL", u)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Uses == nil {
		cfg.Uses = func(string) bool { return true }
	}
	if cfg.Conversation == nil {
		cfg.Conversation = func(string) string { return "" }
	}
	cfg.ServiceURL = strings.TrimSuffix(cfg.ServiceURL, "/") + "/"
	t := &Teams{cfg: cfg, http: cfg.HTTPClient, log: cfg.Logger, now: cfg.Now}
	t.keys = &keySet{metadata: cfg.OpenIDMetadata, http: cfg.HTTPClient, now: cfg.Now}
	return t, nil
}

// Surface is the adapter of the surface port.
func (t *Teams) Surface() surface.Adapter { return adapter{t} }

// httpError is the connector's answer to a call that failed.
type httpError struct {
	Status     int
	RetryAfter time.Duration
	Body       string
}

func (e *httpError) Error() string {
	return fmt.Sprintf("the Bot Connector answered %d: %s", e.Status, e.Body)
}

// bearer is the bot's token for the connector, asked for with its client
// credentials and kept until shortly before it expires.
func (t *Teams) bearer(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && t.now().Before(t.expires) {
		return t.token, nil
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {t.cfg.AppID},
		"client_secret": {t.cfg.AppPassword}, "scope": {Scope}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := t.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("getting the bot's token: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return "", &httpError{Status: resp.StatusCode, Body: "token: " + snippet(body)}
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || tok.AccessToken == "" {
		return "", errors.New("getting the bot's token: the answer holds no access_token")
	}
	t.token = tok.AccessToken
	life := time.Duration(tok.ExpiresIn) * time.Second
	t.expires = t.now().Add(life - min(5*time.Minute, life/2))
	return t.token, nil
}

// call sends an activity to the connector: method at path (below the
// service URL), and decodes the answer's id.
func (t *Teams) call(ctx context.Context, method, path string, activity any) (string, error) {
	tok, err := t.bearer(ctx)
	if err != nil {
		return "", err
	}
	var body io.Reader
	if activity != nil {
		b, err := json.Marshal(activity)
		if err != nil {
			return "", err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.cfg.ServiceURL+path, body)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if activity != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		e := &httpError{Status: resp.StatusCode, Body: snippet(out)}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			e.RetryAfter = time.Duration(s) * time.Second
		}
		if resp.StatusCode == http.StatusUnauthorized {
			t.mu.Lock()
			t.token = "" // ask for a new one next time
			t.mu.Unlock()
		}
		return "", e
	}
	var r struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(out, &r)
	return r.ID, nil
}

func snippet(b []byte) string {
	s := strings.ToValidUTF8(string(b), "?")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// activitiesPath is the path of a conversation's activities, or of one.
func activitiesPath(conversation, activity string) string {
	p := "v3/conversations/" + url.PathEscape(conversation) + "/activities"
	if activity != "" {
		p += "/" + url.PathEscape(activity)
	}
	return p
}

// cardRef is a card's ref: conversationId/activityId (an activity id has
// no slash; a conversation id may).
func cardRef(conversation, activity string) string { return conversation + "/" + activity }

// skipPrefix begins the ref of a card not sent: a tool whose requests do
// not go to Teams gets one, so that the ledger holds a card for every
// surface and nothing asks for one again.
const skipPrefix = "skip:"

func skipped(ref string) bool { return strings.HasPrefix(ref, skipPrefix) }

func splitRef(ref string) (conversation, activity string) {
	i := strings.LastIndex(ref, "/")
	if i < 0 {
		return ref, ""
	}
	return ref[:i], ref[i+1:]
}
