package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/storetest"
)

// EffectStrings must agree with countersign_effect_strings, which defined the
// lookup before the values were stored at intake.
func TestEffectStringsAgreesWithSQL(t *testing.T) {
	t.Parallel()
	tx := storetest.Tx(t)
	ctx := context.Background()
	long := strings.Repeat("é", 200)
	for _, effect := range []string{
		`{}`,
		`{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}`,
		`{"a":["x",{"b":"y"},["w",""]],"c":"z","k":"","n":1,"t":true,"f":null,"x2":"x"}`,
		`{"key_only":1,"nested":{"key_only":{"deeper":"value"}}}`,
		`{"esc":"a\"b\\c\n\u00e9\ud83d\ude00","tab":"\t","sp" : "spaced" , "q":"\"quoted\":"}`,
		`{"long":"` + long + `","longer":"` + long + `x"}`,
		`{"dup":"same","again":["same","same"]}`,
	} {
		got, err := store.EffectStrings([]byte(effect))
		if err != nil {
			t.Fatalf("%s: %v", effect, err)
		}
		var want []string
		if err := tx.QueryRow(ctx, `SELECT countersign_effect_strings($1::jsonb)`, effect).Scan(&want); err != nil {
			t.Fatalf("%s: %v", effect, err)
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("EffectStrings(%s) = %q, SQL %q", effect, got, want)
		}
	}
}

func TestRequestsByEffectStringFindsStoredValues(t *testing.T) {
	forEachStore(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		p := store.NewRequest{
			Key: "wa_effect_strings", BasisHash: "sha256:b", RunID: "r", Step: []byte(`1`), Tool: "t",
			Snapshot: []byte(`{"customer":{"id":"cus_\"7\""},"lines":[{"sku":"sku-1"}]}`), PayloadHash: "sha256:p",
			RequestedBy: "agent", TTL: 3600e6,
		}
		if _, err := b.InsertRequests(ctx, []store.NewRequest{p}, nil); err != nil {
			t.Fatal(err)
		}
		for value, want := range map[string]int{`cus_"7"`: 1, "sku-1": 1, "customer": 0, "sku": 0} {
			reqs, err := b.RequestsByEffectString(ctx, value, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) != want {
				t.Errorf("RequestsByEffectString(%q) = %d requests, want %d", value, len(reqs), want)
			}
		}
	})
}
