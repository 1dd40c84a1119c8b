package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/intentkey/intentkeytest"
)

func TestKeyCommandPrintsTheDerivedKey(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	in := strings.NewReader(`{"run_id": "r-7f3a", "step": 6, "tool": "billing.credit",
		"effect": {"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}, "summary": "anything"}`)
	if code := run(context.Background(), []string{"key"}, envFrom(nil), in, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if got := strings.TrimSpace(out.String()); got != "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c" {
		t.Errorf("key = %s", got)
	}
}

func TestKeyCommandRefusesAmbiguousInput(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	in := strings.NewReader(`{"run_id": "r", "step": 6, "step": 7, "tool": "t", "effect": {}}`)
	if code := run(context.Background(), []string{"key"}, envFrom(nil), in, &out, &errOut); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(errOut.String(), "duplicate member name") || out.Len() != 0 {
		t.Errorf("stdout %q stderr %q", out.String(), errOut.String())
	}
}

// `countersign key` prints the key of every shared vector and refuses every
// refused one, exiting 1 with its JSON Pointer and printing no key
// (internal/intentkey/testdata/key-vectors.json).
func TestKeyCommandMatchesTheSharedVectors(t *testing.T) {
	t.Parallel()
	vectors := intentkeytest.Load(t)
	for _, v := range vectors.Keys {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"key"}, envFrom(nil), bytes.NewReader(v.Intent), &out, &errOut); code != 0 {
			t.Fatalf("%s: exit %d: %s", v.Name, code, errOut.String())
		}
		if got := strings.TrimSpace(out.String()); got != v.Key {
			t.Errorf("%s: key = %s, want %s", v.Name, got, v.Key)
		}
	}
	for _, v := range vectors.Refused {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"key"}, envFrom(nil), bytes.NewReader(v.Intent), &out, &errOut)
		if code != 1 || out.Len() != 0 || !strings.Contains(errOut.String(), " at "+v.Pointer+" ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 naming %s", v.Name, code, out.String(), errOut.String(), v.Pointer)
		}
	}
}

// An intent with its own idempotency_key keys as that key.
func TestKeyCommandPrintsTheClientKey(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	in := strings.NewReader(`{"run_id": "r-7f3a", "step": 6, "tool": "billing.credit", "effect": {"invoice": "inv_8841"}, "idempotency_key": "dispatch-4711-credit"}`)
	if code := run(context.Background(), []string{"key"}, envFrom(nil), in, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if got := strings.TrimSpace(out.String()); got != "dispatch-4711-credit" {
		t.Errorf("key = %s, want the client's key", got)
	}
}

// `countersign key` takes and refuses client keys as the hook does (the
// shared vectors' client keys), printing no key for a refused one.
func TestKeyCommandChecksTheClientKey(t *testing.T) {
	t.Parallel()
	v := intentkeytest.Load(t).ClientKeys
	intent := func(key string) *bytes.Reader {
		quoted, _ := json.Marshal(key)
		return bytes.NewReader([]byte(`{"run_id": "r-7f3a", "step": 6, "tool": "billing.credit",
			"effect": {"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}, "idempotency_key": ` + string(quoted) + `}`))
	}
	for _, k := range v.Accepted {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"key"}, envFrom(nil), intent(k.Key), &out, &errOut); code != 0 || strings.TrimSpace(out.String()) != k.Key {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", k.Name, code, out.String(), errOut.String())
		}
	}
	for _, k := range v.Refused {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"key"}, envFrom(nil), intent(k.Key), &out, &errOut)
		if code != 1 || out.Len() != 0 || !strings.Contains(errOut.String(), "Idempotency-Key") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 naming the Idempotency-Key", k.Name, code, out.String(), errOut.String())
		}
	}
}

// `countersign key` refuses, as the hook does, a number RFC 8785 would
// write as another value, naming its JSON Pointer, and prints no key; an
// exact number written another way keys as RFC 8785 writes it.
func TestKeyCommandRefusesInexactNumbers(t *testing.T) {
	t.Parallel()
	intent := func(amount string) string {
		return `{"run_id": "r-7f3a", "step": 6, "tool": "billing.credit",
			"effect": {"invoice": "inv_8841", "lines": [{"amount": 1}, {"amount": ` + amount + `}]}}`
	}
	key := func(body string) (code int, stdout, stderr string) {
		var out, errOut bytes.Buffer
		code = run(context.Background(), []string{"key"}, envFrom(nil), strings.NewReader(body), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	for _, n := range []string{"9007199254740993.0", "12345678901234567891e0", "1e-400", "2.4e-324", "0." + strings.Repeat("1", 5000), "9007199254740993", "1e400"} {
		code, stdout, stderr := key(intent(n))
		if code != 1 || stdout != "" || !strings.Contains(stderr, " at /effect/lines/1/amount ") {
			t.Errorf("%.30s: exit %d, stdout %q, stderr %q; want exit 1 naming /effect/lines/1/amount", n, code, stdout, stderr)
		}
	}
	for written, canonical := range map[string]string{"1.0": "1", "1e2": "100", "-0": "0", "0.10": "0.1", "5e-324": "5e-324"} {
		code, got, stderr := key(intent(written))
		_, want, _ := key(intent(canonical))
		if code != 0 || got == "" || got != want {
			t.Errorf("%s: exit %d, key %q (%s); want %q, the key of %s", written, code, got, stderr, want, canonical)
		}
	}
}
