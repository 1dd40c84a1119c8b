package embedded

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// maxEffectString is the longest effect string kept for lookups, in
// characters as PostgreSQL's length() counts them: ids are short, and notes
// or descriptions are not ids.
const maxEffectString = 200

// effectStrings lists the distinct string values at any depth of an effect,
// as countersign_effect_strings does in PostgreSQL.
func effectStrings(snapshot []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(snapshot))
	dec.UseNumber() // numbers are not looked up; this only avoids float parsing
	var effect any
	if err := dec.Decode(&effect); err != nil {
		return nil, fmt.Errorf("reading effect: %w", err)
	}
	seen := make(map[string]bool)
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if n := utf8.RuneCountInString(v); n >= 1 && n <= maxEffectString && !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		case []any:
			for _, item := range v {
				walk(item)
			}
		case map[string]any:
			for _, item := range v {
				walk(item)
			}
		}
	}
	walk(effect)
	return out, nil
}
