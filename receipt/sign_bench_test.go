package receipt_test

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/receipt"
)

// BenchmarkSign is what a receipt costs an approval: its claims encoded
// and signed (Ed25519), once per approved write (docs/BENCHMARKS.md).
func BenchmarkSign(b *testing.B) {
	ks := receipt.NewKeySet(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))
	now := time.Now().Unix()
	c := receipt.Claims{
		Key: "wa_" + strings.Repeat("0", 64), Tool: "billing.credit", Agent: "billing-agent",
		EffectSHA256: strings.Repeat("ab", 32), DecidedBy: "U0ALICE", Via: "human",
		PolicyVersion: "sha256:" + strings.Repeat("cd", 32), IssuedAt: now, Expiry: now + 3600,
	}
	b.ReportAllocs()
	var token string
	for b.Loop() {
		var err error
		if token, err = ks.Sign(c); err != nil {
			b.Fatal(err)
		}
	}
	if strings.Count(token, ".") != 2 {
		b.Fatalf("not a compact JWS: %q", token)
	}
}
