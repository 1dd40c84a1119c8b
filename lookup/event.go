package lookup

import (
	"fmt"
	"sort"
)

// Field is one small fact of an audit event worth showing: a verdict, a
// code, a state.
type Field struct {
	Name, Value string
}

// EventFields returns the strings, numbers and booleans of an event's data in
// name order, leaving out the hashes and the key that every reader already has.
func EventFields(data map[string]any) []Field {
	names := make([]string, 0, len(data))
	for k := range data {
		names = append(names, k)
	}
	sort.Strings(names)
	var fields []Field
	for _, k := range names {
		switch v := data[k].(type) {
		case string:
			if k == "payload_hash_seen" || k == "key" {
				continue
			}
			fields = append(fields, Field{k, v})
		case float64, bool:
			fields = append(fields, Field{k, fmt.Sprint(v)})
		}
	}
	return fields
}
