package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
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
