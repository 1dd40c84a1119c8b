package approvals

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/countersign/countersign/internal/intentkey"
)

// The key scheme itself lives in package intentkey, which the Go client
// imports too, so that an agent's offline key and the stored key are derived
// by the same code. These names are the hook's view of it.

// KeyPrefix versions the key scheme; a new scheme gets a new prefix.
const KeyPrefix = intentkey.Prefix

// Basis is what a derived key is computed from (intentkey.Basis).
type Basis = intentkey.Basis

// Key derives the intent key: "wa_" + hex(sha256(JCS(basis))).
func Key(b Basis) (string, error) { return intentkey.Key(b) }

// Derive returns the derived key and the basis hash, the fingerprint stored
// with every key (derived or sent by the client) to tell a replay from a
// reuse of the key for another write.
func Derive(b Basis) (key, basisHash string, err error) { return intentkey.Derive(b) }

// ShortKey is the form shown to humans: the first 12 characters and the last 4.
func ShortKey(key string) string { return intentkey.Short(key) }

// CheckClientKeyForm refuses a client key that is not 8 to 255 characters
// of letters, digits and -_.:~/+= (intentkey.CheckClientKeyForm), before
// the intent's derived key is known.
func CheckClientKeyForm(key string) error { return intentkey.CheckClientKeyForm(key) }

// CheckClientKey refuses a client key that CheckClientKeyForm refuses, or
// one that begins with wa_ in any letter case and is not derived, the key
// the intent derives (intentkey.CheckClientKey).
func CheckClientKey(key, derived string) error { return intentkey.CheckClientKey(key, derived) }

// Canonicalize returns the RFC 8785 form of a JSON value: the snapshot bytes
// stored, shown to reviewers and sent to the provider.
func Canonicalize(raw []byte) ([]byte, error) { return intentkey.Canonicalize(raw) }

// PayloadHash is the hash of a snapshot as recorded on approvals and checked
// by the executor before it sends.
func PayloadHash(snapshot []byte) string { return hashOf(snapshot) }

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
