package receipt_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/receipt"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json")

const vectorsFile = "testdata/vectors.json"

// vectors is testdata/vectors.json: receipts signed from fixed seeds
// (Ed25519 signs deterministically) and what a verifier must answer for
// each write, so verifiers in other languages check against the same bytes.
type vectors struct {
	About   string          `json:"about"`
	Keys    []vectorKey     `json:"keys"`
	JWKS    json.RawMessage `json:"jwks"`
	Signed  []signedVector  `json:"signed"`
	Checked []checkedVector `json:"checked"`
}

type vectorKey struct {
	Seed string `json:"seed_hex"`
	Kid  string `json:"kid"`
	PEM  string `json:"pem"`
}

type signedVector struct {
	Name    string         `json:"name"`
	Key     int            `json:"key"` // index into keys
	Claims  receipt.Claims `json:"claims"`
	Receipt string         `json:"receipt"`
}

type checkedVector struct {
	Name    string `json:"name"`
	Receipt string `json:"receipt"`
	Now     int64  `json:"now"`
	Key     string `json:"idempotency_key"`
	Tool    string `json:"tool"`
	Body    string `json:"body"`
	// Error is "" when the verifier accepts, else the refusal: missing,
	// malformed, unknown_key, signature, expired, other_key, other_tool,
	// effect.
	Error string `json:"error"`
}

var refusals = map[string]error{
	"missing": receipt.ErrMissing, "malformed": receipt.ErrMalformed, "unknown_key": receipt.ErrUnknownKey,
	"signature": receipt.ErrSignature, "expired": receipt.ErrExpired, "other_key": receipt.ErrOtherKey,
	"other_tool": receipt.ErrOtherTool, "effect": receipt.ErrEffect,
}

func seededKey(b byte) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = b + byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

const (
	vectorKeyName = "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c"
	vectorBody    = `{"amount_cents":4200,"currency":"USD","invoice":"inv_8841"}`
	vectorIat     = 1760000000
)

// buildVectors signs the vectors afresh.
func buildVectors(t *testing.T) vectors {
	t.Helper()
	current, older, stranger := seededKey(1), seededKey(101), seededKey(201)
	set := receipt.NewKeySet(current, older.Public().(ed25519.PublicKey))
	oldSet := receipt.NewKeySet(older)
	strangers := receipt.NewKeySet(stranger)
	digest, err := receipt.EffectDigest([]byte(vectorBody))
	if err != nil {
		t.Fatal(err)
	}
	claims := receipt.Claims{Key: vectorKeyName, Tool: "billing.credit", Agent: "billing-agent", EffectSHA256: digest,
		DecidedBy: "U024BE7LH", Via: "human", PolicyVersion: "sha256:9f2c", IssuedAt: vectorIat, Expiry: vectorIat + 3600}
	sign := func(ks *receipt.KeySet, c receipt.Claims) string {
		tok, err := ks.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good, byOld, byStranger := sign(set, claims), sign(oldSet, claims), sign(strangers, claims)
	parts := strings.Split(good, ".")
	sig := []byte(parts[2])
	sig[10] ^= 'A' ^ 'B' // one changed character inside the signature
	if sig[10] == parts[2][10] {
		t.Fatal("signature unchanged")
	}
	forged := parts[0] + "." + parts[1] + "." + string(sig)

	var doc vectors
	doc.About = "Countersign-Receipt examples (docs/RECEIPTS.md). 'keys' are Ed25519 keys from their 32-byte seeds; the first signs, the second is an older key still published; 'jwks' is what GET /.well-known/jwks.json serves for them. 'signed': the compact JWS a signer must produce for the claims with keys[key] (the payload is the claims' JSON in the order shown). 'checked': what a verifier holding 'jwks' must answer at 'now' (seconds, no leeway) for a write with that Idempotency-Key, tool and body: error \"\" accepts, else the refusal."
	for _, k := range []ed25519.PrivateKey{current, older} {
		pemText, err := receipt.MarshalPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		doc.Keys = append(doc.Keys, vectorKey{Seed: hexOf(k.Seed()), Kid: receipt.KeyID(k.Public().(ed25519.PublicKey)), PEM: string(pemText)})
	}
	doc.JWKS = set.MarshalJWKS()
	doc.Signed = []signedVector{
		{Name: "approved by a reviewer", Key: 0, Claims: claims, Receipt: good},
		{Name: "signed by the older key", Key: 1, Claims: claims, Receipt: byOld},
	}
	now := int64(vectorIat + 60)
	ok := checkedVector{Receipt: good, Now: now, Key: vectorKeyName, Tool: "billing.credit", Body: vectorBody}
	with := func(name string, edit func(*checkedVector)) checkedVector {
		c := ok
		c.Name = name
		edit(&c)
		return c
	}
	doc.Checked = []checkedVector{
		with("the approved write", func(*checkedVector) {}),
		with("the approved effect written in another order and spacing", func(c *checkedVector) {
			c.Body = `{ "invoice": "inv_8841", "currency": "USD", "amount_cents": 4200 }`
		}),
		with("signed by the older key, still published", func(c *checkedVector) { c.Receipt = byOld }),
		with("no receipt", func(c *checkedVector) { c.Receipt, c.Error = "", "missing" }),
		with("not a JWS", func(c *checkedVector) { c.Receipt, c.Error = "approved", "malformed" }),
		with("expired", func(c *checkedVector) { c.Now, c.Error = vectorIat+3600, "expired" }),
		with("a receipt for another key", func(c *checkedVector) { c.Key, c.Error = "wa_"+strings.Repeat("0", 64), "other_key" }),
		with("a receipt for another tool", func(c *checkedVector) { c.Tool, c.Error = "billing.refund", "other_tool" }),
		with("one changed byte of the effect", func(c *checkedVector) {
			c.Body, c.Error = strings.Replace(vectorBody, "4200", "4201", 1), "effect"
		}),
		with("a wrong signature", func(c *checkedVector) { c.Receipt, c.Error = forged, "signature" }),
		with("signed by a key the JWKS does not hold", func(c *checkedVector) { c.Receipt, c.Error = byStranger, "unknown_key" }),
	}
	return doc
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestVectorsAreCurrent holds testdata/vectors.json to what this package
// signs (go test -run TestVectorsAreCurrent -update rewrites it).
func TestVectorsAreCurrent(t *testing.T) {
	want, err := json.MarshalIndent(buildVectors(t), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *update {
		if err := os.WriteFile(vectorsFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s is not what the package signs; rerun with -update and review the diff", vectorsFile)
	}
}

// TestVectors checks the file as another language's verifier would: from
// its seeds, its JWKS and its strings alone.
func TestVectors(t *testing.T) {
	text, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc vectors
	if err := json.Unmarshal(text, &doc); err != nil {
		t.Fatal(err)
	}
	ks, err := receipt.ParseKeySet([]byte(doc.Keys[0].PEM + doc.Keys[1].PEM))
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, doc.JWKS); err != nil {
		t.Fatal(err)
	}
	if string(ks.MarshalJWKS()) != compact.String() {
		t.Errorf("JWKS from the keys' PEM:\n%s\nwant\n%s", ks.MarshalJWKS(), doc.JWKS)
	}
	for _, s := range doc.Signed {
		signer, err := receipt.ParseKeySet([]byte(doc.Keys[s.Key].PEM))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := signer.Sign(s.Claims); err != nil || got != s.Receipt {
			t.Errorf("%s: signed %q, %v; want %q", s.Name, got, err, s.Receipt)
		}
	}
	if len(doc.Checked) < 10 {
		t.Fatalf("only %d checked vectors", len(doc.Checked))
	}
	v, err := receipt.NewVerifier(doc.JWKS)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Checked {
		v.Now = func() time.Time { return time.Unix(c.Now, 0) }
		_, err := v.Verify(c.Receipt, receipt.Want{Key: c.Key, Tool: c.Tool, Body: []byte(c.Body)})
		switch {
		case c.Error == "" && err != nil:
			t.Errorf("%s: refused: %v", c.Name, err)
		case c.Error != "" && !errors.Is(err, refusals[c.Error]):
			t.Errorf("%s: answered %v, want %s", c.Name, err, c.Error)
		}
	}
}
