package approvals

import "testing"

// BenchmarkDecodeAndKey is the CPU an intake spends before touching the
// database: strict decoding, canonicalization and the key.
func BenchmarkDecodeAndKey(b *testing.B) {
	body := []byte(vectorBody)
	b.ReportAllocs()
	for b.Loop() {
		in, err := DecodeIntent(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := Derive(in.Basis()); err != nil {
			b.Fatal(err)
		}
	}
}
