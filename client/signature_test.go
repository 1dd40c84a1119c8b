package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/executor"
)

// VerifySignature accepts what the executor signs, and nothing else: not
// another body, another secret, or a signature older than the tolerance.
func TestVerifySignature(t *testing.T) {
	t.Parallel()
	secret, body := []byte("s3cret"), []byte(`{"amount_cents":4200}`)
	now := executor.Sign(secret, time.Now(), body)
	if err := client.VerifySignature(secret, now, body, 0); err != nil {
		t.Fatalf("a fresh signature was refused: %v", err)
	}
	old := executor.Sign(secret, time.Now().Add(-10*time.Minute), body)
	if err := client.VerifySignature(secret, old, body, time.Hour); err != nil {
		t.Errorf("a 10-minute-old signature within an hour's tolerance was refused: %v", err)
	}
	for name, err := range map[string]error{
		"another body":          client.VerifySignature(secret, now, []byte(`{"amount_cents":4201}`), 0),
		"another secret":        client.VerifySignature([]byte("other"), now, body, 0),
		"older than the window": client.VerifySignature(secret, old, body, 0),
		"no header":             client.VerifySignature(secret, "", body, 0),
		"garbage":               client.VerifySignature(secret, "t=x,v1=zz", body, 0),
	} {
		if !errors.Is(err, client.ErrBadSignature) {
			t.Errorf("%s: %v, want ErrBadSignature", name, err)
		}
	}
}
