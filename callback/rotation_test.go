package callback_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/callback"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/store/drivertest"
)

// While an agent's callback secret is rotated, the target holds the old and
// the new one and every callback is signed with both: an agent that holds
// only the old secret and one that holds only the new verify it with the Go
// client's verifier, v2 and v1, and a secret in neither is refused.
func TestCallbackSignedWithEverySecretDuringRotation(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		const oldSecret, newSecret = "callback-secret-old", "callback-secret-new"
		e := newEndpoint(t)
		b := setupTarget(t, drv, callback.Target{URL: e.URL + "/hooks/countersign",
			Secrets: [][]byte{[]byte(oldSecret), []byte(newSecret)}}, time.Millisecond)
		rejected(t, b.b, "wa_cb_rotation")
		b.drain(t)
		got := e.got()
		if len(got) != 1 {
			t.Fatalf("endpoint received %d callbacks, want 1", len(got))
		}
		r := got[0]
		// One v1 and one v2 per secret, all v1 first (docs/CALLBACKS.md,
		// "Rotation").
		parts := strings.Split(r.signature, ",")
		if len(parts) != 5 || !strings.HasPrefix(parts[0], "t=") || !strings.HasPrefix(parts[1], "v1=") ||
			!strings.HasPrefix(parts[2], "v1=") || !strings.HasPrefix(parts[3], "v2=") || !strings.HasPrefix(parts[4], "v2=") {
			t.Fatalf("Countersign-Signature %q, want t=…,v1=…,v1=…,v2=…,v2=…", r.signature)
		}
		sent := client.SignedRequest{Method: http.MethodPost, Path: r.path, Delivery: r.delivery}
		for _, held := range []string{oldSecret, newSecret} {
			if err := client.VerifySignatureV2([]byte(held), r.signature, sent, r.body, 0); err != nil {
				t.Errorf("an agent holding only %q: v2 refused: %v", held, err)
			}
			if err := client.VerifySignature([]byte(held), r.signature, r.body, 0); err != nil {
				t.Errorf("an agent holding only %q: v1 refused: %v", held, err)
			}
		}
		if err := client.VerifySignatureV2([]byte(secret), r.signature, sent, r.body, 0); !errors.Is(err, client.ErrBadSignature) {
			t.Errorf("a secret countersign does not hold: %v, want ErrBadSignature", err)
		}
	})
}
