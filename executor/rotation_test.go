package executor_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// While a dispatch secret is rotated, the executor (or the tool) holds the
// old and the new one and signs every dispatch with both: a provider that
// holds only the new secret and one that holds only the old both verify it
// with the Go client's verifier, v2 and v1, and a secret in neither list is
// refused.
func TestDispatchSignedWithEverySecretDuringRotation(t *testing.T) {
	const oldSecret, newSecret = "dispatch-secret-old", "dispatch-secret-new"
	both := [][]byte{[]byte(oldSecret), []byte(newSecret)}
	for name, opts := range map[string]func(d *drivertest.Driver) *options{
		"the executor's secrets": func(d *drivertest.Driver) *options {
			return &options{driver: d, config: func(c *executor.Config) { c.Secrets = both }}
		},
		"the tool's own secrets": func(d *drivertest.Driver) *options {
			return &options{driver: d, tool: func(tool *executor.Tool) { tool.Secrets = both }}
		},
	} {
		t.Run(name, func(t *testing.T) {
			drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
				t.Parallel()
				b := setup(t, opts(d))
				b.provider.Secret = []byte(newSecret) // a provider already moved to the new secret
				req := b.approve(t)
				b.dispatch(t)
				wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
				if n := b.provider.BadSignatures(); n != 0 {
					t.Fatalf("the provider holding only the new secret refused %d signatures", n)
				}
				obj := b.provider.AllObjects()[0]
				// One v1 and one v2 per secret, all v1 first (docs/CALLBACKS.md,
				// "Rotation").
				parts := strings.Split(obj.Signature, ",")
				if len(parts) != 5 || !strings.HasPrefix(parts[1], "v1=") || !strings.HasPrefix(parts[2], "v1=") ||
					!strings.HasPrefix(parts[3], "v2=") || !strings.HasPrefix(parts[4], "v2=") {
					t.Fatalf("Countersign-Signature %q, want t=…,v1=…,v1=…,v2=…,v2=…", obj.Signature)
				}
				sent := client.SignedRequest{Method: http.MethodPost, Path: "/credits", IdempotencyKey: req.Key}
				for _, held := range []string{oldSecret, newSecret} {
					if err := client.VerifySignatureV2([]byte(held), obj.Signature, sent, obj.Body, 0); err != nil {
						t.Errorf("a provider holding only %q: v2 refused: %v", held, err)
					}
					if err := client.VerifySignature([]byte(held), obj.Signature, obj.Body, 0); err != nil {
						t.Errorf("a provider holding only %q: v1 refused: %v", held, err)
					}
				}
				if err := client.VerifySignatureV2([]byte(secret), obj.Signature, sent, obj.Body, 0); !errors.Is(err, client.ErrBadSignature) {
					t.Errorf("a secret in neither list: %v, want ErrBadSignature", err)
				}
			})
		})
	}
}
