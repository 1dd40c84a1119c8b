package receipt

import (
	"crypto/ed25519"
	"encoding/json"
)

// Alg is the JWS algorithm of every receipt (RFC 8037).
const Alg = "EdDSA"

// Type is the typ header of every receipt, so a receipt is never taken for
// another JWT signed with the same key.
const Type = "countersign-receipt+jwt"

// header is a receipt's protected header.
type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

// Sign returns the compact JWS of c signed with the set's signing key.
func (ks *KeySet) Sign(c Claims) (string, error) {
	h, err := json.Marshal(header{Alg: Alg, Kid: ks.signerKID, Typ: Type})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	input := b64(h) + "." + b64(payload)
	return input + "." + b64(ed25519.Sign(ks.signer, []byte(input))), nil
}
