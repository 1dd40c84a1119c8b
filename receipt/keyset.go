package receipt

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The environment that names the signing key: the key itself (PEM) or a
// file holding it. The first PEM block is the key that signs; any further
// blocks are older keys (PUBLIC KEY or PRIVATE KEY) still published in the
// JWKS, so receipts signed before a rotation verify until they expire.
const (
	EnvKey     = "COUNTERSIGN_RECEIPT_KEY"
	EnvKeyFile = "COUNTERSIGN_RECEIPT_KEY_FILE"
)

// KeyFileName is the file in the data directory a local run generates its
// signing key into, once, when the environment names none.
const KeyFileName = "receipt-key.pem"

// KeySet is the key that signs receipts and the public keys of the keys it
// replaced.
type KeySet struct {
	signer    ed25519.PrivateKey
	signerKID string
	published []publicKey // the signer's first
}

type publicKey struct {
	kid string
	key ed25519.PublicKey
}

// NewKeySet returns the set that signs with signer and also publishes
// older.
func NewKeySet(signer ed25519.PrivateKey, older ...ed25519.PublicKey) *KeySet {
	pub := signer.Public().(ed25519.PublicKey)
	ks := &KeySet{signer: signer, signerKID: KeyID(pub), published: []publicKey{{KeyID(pub), pub}}}
	for _, k := range older {
		if kid := KeyID(k); kid != ks.signerKID {
			ks.published = append(ks.published, publicKey{kid, k})
		}
	}
	return ks
}

// KID is the key id of the signing key, the kid of every receipt it signs.
func (ks *KeySet) KID() string { return ks.signerKID }

// ParseKeySet reads PEM blocks: a PKCS#8 Ed25519 PRIVATE KEY first (what
// `openssl genpkey -algorithm ed25519` writes), then older keys as PUBLIC
// KEY (PKIX) or PRIVATE KEY blocks.
func ParseKeySet(text []byte) (*KeySet, error) {
	var signer ed25519.PrivateKey
	var older []ed25519.PublicKey
	for n := 0; ; n++ {
		var block *pem.Block
		block, text = pem.Decode(text)
		if block == nil {
			if strings.TrimSpace(string(text)) != "" {
				return nil, errors.New("receipt key: text that is not a PEM block")
			}
			break
		}
		key, err := parseBlock(block)
		if err != nil {
			return nil, fmt.Errorf("receipt key: PEM block %d: %w", n+1, err)
		}
		if n == 0 {
			priv, ok := key.(ed25519.PrivateKey)
			if !ok {
				return nil, errors.New("receipt key: the first PEM block must be the private key that signs")
			}
			signer = priv
			continue
		}
		switch k := key.(type) {
		case ed25519.PrivateKey:
			older = append(older, k.Public().(ed25519.PublicKey))
		case ed25519.PublicKey:
			older = append(older, k)
		}
	}
	if signer == nil {
		return nil, errors.New("receipt key: no PEM block")
	}
	return NewKeySet(signer, older...), nil
}

func parseBlock(block *pem.Block) (any, error) {
	switch block.Type {
	case "PRIVATE KEY":
		key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		if k, ok := key.(ed25519.PrivateKey); ok {
			return k, nil
		}
		return nil, fmt.Errorf("a %T, not an Ed25519 key", key)
	case "PUBLIC KEY":
		key, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		if k, ok := key.(ed25519.PublicKey); ok {
			return k, nil
		}
		return nil, fmt.Errorf("a %T, not an Ed25519 key", key)
	}
	return nil, fmt.Errorf("type %q, want PRIVATE KEY or PUBLIC KEY", block.Type)
}

// LoadKeySet reads the key set the environment names (EnvKey, else
// EnvKeyFile). When it names none and dataDir is not "", it reads
// dataDir's KeyFileName, generating it first if it is absent: a local run
// keeps one key across restarts. With neither, it answers (nil, nil): no
// receipts are signed.
func LoadKeySet(getenv func(string) string, dataDir string) (*KeySet, error) {
	if text := getenv(EnvKey); text != "" {
		return ParseKeySet([]byte(text))
	}
	if path := getenv(EnvKeyFile); path != "" {
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvKeyFile, err)
		}
		return ParseKeySet(text)
	}
	if dataDir == "" {
		return nil, nil
	}
	path := filepath.Join(dataDir, KeyFileName)
	text, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if text, err = generateKeyFile(path); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	return ParseKeySet(text)
}

// generateKeyFile writes a new signing key to path, readable by its owner
// only; a file that appeared meanwhile (another process's) wins.
func generateKeyFile(path string) ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	text, err := MarshalPrivateKey(priv)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return os.ReadFile(path)
	} else if err != nil {
		return nil, err
	}
	if _, err := f.Write(text); err != nil {
		f.Close()
		return nil, err
	}
	return text, f.Close()
}

// MarshalPrivateKey writes key as a PKCS#8 PEM block.
func MarshalPrivateKey(key ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// KeyID is a public key's RFC 7638 thumbprint (SHA-256, base64url): the
// same key has the same kid wherever it is loaded.
func KeyID(key ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + b64(key) + `"}`))
	return b64(sum[:])
}

// JWK is one public key of a JWKS (RFC 8037's OKP form).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
}

// JWKS is the document GET /.well-known/jwks.json serves.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// JWKS returns the public keys a verifier takes, the signing key's first.
func (ks *KeySet) JWKS() JWKS {
	doc := JWKS{Keys: []JWK{}}
	if ks == nil {
		return doc
	}
	for _, k := range ks.published {
		doc.Keys = append(doc.Keys, JWK{Kty: "OKP", Crv: "Ed25519", X: b64(k.key), Kid: k.kid, Alg: Alg, Use: "sig"})
	}
	return doc
}

// MarshalJWKS is JWKS as JSON.
func (ks *KeySet) MarshalJWKS() []byte {
	b, _ := json.Marshal(ks.JWKS())
	return b
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
