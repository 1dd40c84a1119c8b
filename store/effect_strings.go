package store

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxEffectString is the longest string value, in characters, that a lookup
// by business id indexes: longer strings (notes, descriptions) are not ids.
const maxEffectString = 200

// EffectStrings lists every string value in an effect (a JSON document), at
// any depth, once each and sorted, leaving out empty strings and strings
// longer than 200 characters: what support engineers look requests up by
// (/countersign inv_8841). Member names are not values and are left out. It
// agrees with the SQL function countersign_effect_strings, but runs at intake
// in Go instead of in the database on every insert. Strings holding U+0000,
// which a PostgreSQL text value cannot, are left out too.
func EffectStrings(effect []byte) ([]string, error) {
	if !utf8.Valid(effect) {
		return nil, errors.New("the effect is not valid UTF-8")
	}
	out := make([]string, 0, 8)
	for i := 0; i < len(effect); i++ {
		if effect[i] != '"' {
			continue
		}
		start, escaped := i, false
		for i++; i < len(effect) && effect[i] != '"'; i++ {
			if effect[i] == '\\' {
				escaped = true
				i++ // the escaped character, which may be a quote
			}
		}
		if i >= len(effect) {
			return nil, errors.New("the effect is not valid JSON: unterminated string")
		}
		raw := effect[start : i+1]
		// A string followed by a colon is a member name.
		j := i + 1
		for j < len(effect) && (effect[j] == ' ' || effect[j] == '\t' || effect[j] == '\n' || effect[j] == '\r') {
			j++
		}
		if j < len(effect) && effect[j] == ':' {
			continue
		}
		var s string
		if escaped {
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, errors.New("the effect is not valid JSON: " + err.Error())
			}
		} else {
			s = string(raw[1 : len(raw)-1])
		}
		if n := utf8.RuneCountInString(s); n >= 1 && n <= maxEffectString && !holdsNUL(s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// holdsNUL reports whether s holds U+0000, which no PostgreSQL text value
// can: no stored key or effect string has it, so a lookup by one finds
// nothing without asking the database, which would refuse the query.
func holdsNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }
