package receipt

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Header is the HTTP header an agent sends a receipt in.
const Header = "Countersign-Receipt"

// Why a Verifier refuses a receipt. Verify wraps one of these, so a
// provider can answer each with errors.Is.
var (
	ErrMissing    = errors.New("receipt: none was sent")
	ErrMalformed  = errors.New("receipt: not a compact JWS countersign signs")
	ErrUnknownKey = errors.New("receipt: signed by a key the JWKS does not hold")
	ErrSignature  = errors.New("receipt: the signature does not match")
	ErrExpired    = errors.New("receipt: expired")
	ErrOtherKey   = errors.New("receipt: approves a request with another key")
	ErrOtherTool  = errors.New("receipt: approves a write of another tool")
	ErrEffect     = errors.New("receipt: the body is not the approved effect")
)

// Verifier checks receipts against countersign's public keys.
type Verifier struct {
	keys map[string]ed25519.PublicKey
	// Now is the clock expiry is checked against; nil is time.Now.
	Now func() time.Time
	// Leeway is how far past its expiry a receipt is still taken, for
	// clocks apart; 0 takes none.
	Leeway time.Duration
}

// NewVerifier returns a verifier of the keys of a JWKS document (GET
// /.well-known/jwks.json). Keys that are not Ed25519 are passed over.
func NewVerifier(jwks []byte) (*Verifier, error) {
	var doc JWKS
	if err := json.Unmarshal(jwks, &doc); err != nil {
		return nil, fmt.Errorf("receipt: JWKS: %w", err)
	}
	v := &Verifier{keys: map[string]ed25519.PublicKey{}}
	for _, k := range doc.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" {
			continue
		}
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("receipt: JWKS: key %q: x is not an Ed25519 public key", k.Kid)
		}
		v.keys[k.Kid] = ed25519.PublicKey(x)
	}
	if len(v.keys) == 0 {
		return nil, errors.New("receipt: JWKS: no Ed25519 key")
	}
	return v, nil
}

// FetchVerifier reads the JWKS at url (countersign's
// /.well-known/jwks.json) with client (nil is http.DefaultClient). Fetch
// again after a rotation: a receipt signed by a key the verifier does not
// hold is refused with ErrUnknownKey.
func FetchVerifier(ctx context.Context, client *http.Client, url string) (*Verifier, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("receipt: JWKS: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("receipt: JWKS: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("receipt: JWKS: %s answered %d", url, resp.StatusCode)
	}
	return NewVerifier(body)
}

// Want is the write a provider received, that a receipt must approve.
type Want struct {
	// Key is the Idempotency-Key the write came with; "" does not check it.
	Key string
	// Tool is the tool the provider serves; "" does not check it.
	Tool string
	// Body is the write's body, the effect: its RFC 8785 digest must equal
	// the receipt's.
	Body []byte
}

// Verify checks token's signature, expiry, and that it approves want, and
// returns its claims.
func (v *Verifier) Verify(token string, want Want) (Claims, error) {
	c, err := v.Parse(token)
	if err != nil {
		return Claims{}, err
	}
	if want.Key != "" && c.Key != want.Key {
		return c, ErrOtherKey
	}
	if want.Tool != "" && c.Tool != want.Tool {
		return c, ErrOtherTool
	}
	digest, err := EffectDigest(want.Body)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrEffect, err)
	}
	if digest != c.EffectSHA256 {
		return c, ErrEffect
	}
	return c, nil
}

// VerifyRequest checks the receipt of an HTTP write: its Countersign-Receipt
// against its Idempotency-Key and body (already read; r's body is not).
func (v *Verifier) VerifyRequest(r *http.Request, tool string, body []byte) (Claims, error) {
	token := strings.TrimSpace(r.Header.Get(Header))
	if token == "" {
		return Claims{}, ErrMissing
	}
	return v.Verify(token, Want{Key: r.Header.Get("Idempotency-Key"), Tool: tool, Body: body})
}

// Parse checks token's signature and expiry and returns its claims,
// without comparing them with a write.
func (v *Verifier) Parse(token string) (Claims, error) {
	if token == "" {
		return Claims{}, ErrMissing
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Claims{}, ErrMalformed
	}
	var h header
	if err := decodePart(parts[0], &h); err != nil || h.Alg != Alg || h.Typ != Type {
		return Claims{}, ErrMalformed
	}
	key, ok := v.keys[h.Kid]
	if !ok {
		return Claims{}, ErrUnknownKey
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return Claims{}, ErrMalformed
	}
	if !ed25519.Verify(key, []byte(parts[0]+"."+parts[1]), sig) {
		return Claims{}, ErrSignature
	}
	var c Claims
	if err := decodePart(parts[1], &c); err != nil {
		return Claims{}, ErrMalformed
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	if !now().Before(time.Unix(c.Expiry, 0).Add(v.Leeway)) {
		return c, ErrExpired
	}
	return c, nil
}

func decodePart(part string, into any) error {
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	return dec.Decode(into)
}
