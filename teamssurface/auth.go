package teamssurface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Token checks' bounds: how long the keys are kept, how often an unknown
// key makes them fetched again, and the clock skew allowed.
const (
	keysTTL      = 24 * time.Hour
	refetchEvery = time.Minute
	leeway       = 5 * time.Minute
)

// keySet is the Bot Framework's signing keys, read from its OpenID
// metadata's jwks_uri and kept for keysTTL.
type keySet struct {
	metadata string
	http     *http.Client
	now      func() time.Time

	mu      sync.Mutex
	keys    jose.JSONWebKeySet
	fetched time.Time
}

// key is the signing key kid, fetching the keys when they are old or do not
// hold it (at most once a refetchEvery).
func (k *keySet) key(ctx context.Context, kid string) (*jose.JSONWebKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	found := k.keys.Key(kid)
	stale := k.fetched.IsZero() || now.Sub(k.fetched) > keysTTL
	if stale || (len(found) == 0 && now.Sub(k.fetched) > refetchEvery) {
		keys, err := k.fetch(ctx)
		if err != nil {
			if len(found) == 0 {
				return nil, err
			}
		} else {
			k.keys, k.fetched = keys, now
			found = k.keys.Key(kid)
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no signing key %q", kid)
	}
	return &found[0], nil
}

func (k *keySet) fetch(ctx context.Context) (jose.JSONWebKeySet, error) {
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := k.getJSON(ctx, k.metadata, &meta); err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("reading the OpenID metadata: %w", err)
	}
	if meta.JWKSURI == "" {
		return jose.JSONWebKeySet{}, errors.New("the OpenID metadata names no jwks_uri")
	}
	var set jose.JSONWebKeySet
	if err := k.getJSON(ctx, meta.JWKSURI, &set); err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("reading the signing keys: %w", err)
	}
	return set, nil
}

func (k *keySet) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := k.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", url, resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// claims are the token's claims that are checked.
type claims struct {
	jwt.Claims
	ServiceURL      string `json:"serviceurl"`
	ServiceURLCamel string `json:"serviceUrl"`
}

// authenticate checks an activity's Authorization header as the Bot
// Framework's connector asks: a JWT signed by one of its keys, issued by
// Issuer for the bot's app id, current, whose serviceurl claim is the
// activity's serviceUrl.
func (t *Teams) authenticate(ctx context.Context, header, serviceURL string) error {
	raw, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || raw == "" {
		return errors.New("no bearer token")
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return fmt.Errorf("reading the token: %w", err)
	}
	if len(tok.Headers) != 1 {
		return errors.New("the token has not one signature")
	}
	key, err := t.keys.key(ctx, tok.Headers[0].KeyID)
	if err != nil {
		return err
	}
	var c claims
	if err := tok.Claims(key.Key, &c); err != nil {
		return fmt.Errorf("checking the token's signature: %w", err)
	}
	if c.Expiry == nil {
		return errors.New("the token has no expiry")
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: Issuer, AnyAudience: jwt.Audience{t.cfg.AppID}, Time: t.now()}, leeway); err != nil {
		return fmt.Errorf("checking the token's claims: %w", err)
	}
	claimed := c.ServiceURL
	if claimed == "" {
		claimed = c.ServiceURLCamel
	}
	if claimed == "" || claimed != serviceURL {
		return errors.New("the activity's serviceUrl is not the token's")
	}
	return nil
}
