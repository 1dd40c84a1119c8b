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

// A dispatch reaches the fake provider with a v2 signature that verifies
// with the method, the path (escaped as sent, without the query) and the
// Idempotency-Key it was sent with, and with nothing else: another method,
// path, key or body is refused, where v1 accepts all but the body.
func TestDispatchSignatureCoversMethodPathAndKey(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d, tool: func(tool *executor.Tool) {
			tool.Method = http.MethodPut
			tool.URL = strings.TrimSuffix(tool.URL, "/credits") + "/v1/credits/inv%2F8841?api_key=x"
		}})
		req := b.approve(t)
		b.dispatch(t)
		wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
		if n := b.provider.BadSignatures(); n != 0 {
			t.Fatalf("the provider refused %d signatures with client.VerifyRequest", n)
		}
		objects := b.provider.AllObjects()
		if len(objects) != 1 {
			t.Fatalf("the provider holds %d objects", len(objects))
		}
		obj := objects[0]
		if obj.Method != http.MethodPut || obj.Path != "/v1/credits/inv%2F8841" || obj.Key != req.Key {
			t.Fatalf("the write arrived as %s %s under %q", obj.Method, obj.Path, obj.Key)
		}
		if parts := strings.Split(obj.Signature, ","); len(parts) != 3 || !strings.HasPrefix(parts[0], "t=") ||
			!strings.HasPrefix(parts[1], "v1=") || !strings.HasPrefix(parts[2], "v2=") {
			t.Fatalf("Countersign-Signature %q, want t=…,v1=…,v2=…", obj.Signature)
		}

		sent := client.SignedRequest{Method: http.MethodPut, Path: "/v1/credits/inv%2F8841", IdempotencyKey: req.Key}
		if err := client.VerifySignatureV2([]byte(secret), obj.Signature, sent, obj.Body, 0); err != nil {
			t.Fatalf("v2 of the dispatch as sent: %v", err)
		}
		if err := client.VerifySignatureV2([]byte("another-tool's-secret"), obj.Signature, sent, obj.Body, 0); !errors.Is(err, client.ErrBadSignature) {
			t.Errorf("v2 with another secret: %v", err)
		}
		for name, change := range map[string]func(r *client.SignedRequest){
			"another method":   func(r *client.SignedRequest) { r.Method = http.MethodPost },
			"another path":     func(r *client.SignedRequest) { r.Path = "/v1/credits/inv%2F8842" },
			"the path decoded": func(r *client.SignedRequest) { r.Path = "/v1/credits/inv/8841" },
			"another key":      func(r *client.SignedRequest) { r.IdempotencyKey = req.Key + "x" },
			"a delivery id":    func(r *client.SignedRequest) { r.Delivery = req.Key },
		} {
			replay := sent
			change(&replay)
			if err := client.VerifySignatureV2([]byte(secret), obj.Signature, replay, obj.Body, 0); !errors.Is(err, client.ErrBadSignature) {
				t.Errorf("%s: v2 verified (%v)", name, err)
			}
			if err := client.VerifySignature([]byte(secret), obj.Signature, obj.Body, 0); err != nil {
				t.Errorf("%s: v1 refused (%v); it covers only the time and the body", name, err)
			}
		}
		other := []byte(strings.Replace(string(obj.Body), "4200", "4201", 1))
		if err := client.VerifySignatureV2([]byte(secret), obj.Signature, sent, other, 0); !errors.Is(err, client.ErrBadSignature) {
			t.Errorf("another body: v2 verified (%v)", err)
		}
		if err := client.VerifySignature([]byte(secret), obj.Signature, other, 0); !errors.Is(err, client.ErrBadSignature) {
			t.Errorf("another body: v1 verified (%v)", err)
		}
	})
}

// A tool with a secret of its own signs its dispatches with it, not with
// the executor's: a dispatch captured at its provider does not verify at a
// provider that holds the shared secret.
func TestDispatchSignsWithTheToolsOwnSecret(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		const own = "billing-credit-only-secret"
		b := setup(t, &options{driver: d, tool: func(tool *executor.Tool) { tool.Secrets = [][]byte{[]byte(own)} }})
		b.provider.Secret = []byte(own)
		req := b.approve(t)
		b.dispatch(t)
		wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
		if n := b.provider.BadSignatures(); n != 0 {
			t.Fatalf("the provider refused %d signatures made with the tool's secret", n)
		}
		obj := b.provider.AllObjects()[0]
		sent := client.SignedRequest{Method: http.MethodPost, Path: "/credits", IdempotencyKey: req.Key}
		if err := client.VerifySignatureV2([]byte(own), obj.Signature, sent, obj.Body, 0); err != nil {
			t.Errorf("v2 with the tool's secret: %v", err)
		}
		if err := client.VerifySignatureV2([]byte(secret), obj.Signature, sent, obj.Body, 0); !errors.Is(err, client.ErrBadSignature) {
			t.Errorf("v2 with the executor's secret: %v, want ErrBadSignature", err)
		}
		if err := client.VerifySignature([]byte(secret), obj.Signature, obj.Body, 0); !errors.Is(err, client.ErrBadSignature) {
			t.Errorf("v1 with the executor's secret: %v, want ErrBadSignature", err)
		}
	})
}
