// Package intentkeytest reads the shared key vectors
// (internal/intentkey/testdata/key-vectors.json) for the tests of every
// implementation of the key: intentkey itself, `countersign key` and the Go
// client. The Python SDK reads the same file.
package intentkeytest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Vector is one intent of the file: a key it derives, or the JSON pointer
// of the number its refusal names.
type Vector struct {
	Name    string          `json:"name"`
	Intent  json.RawMessage `json:"intent"`
	Key     string          `json:"key"`
	Pointer string          `json:"pointer"`
}

// Vectors are the file's intents that derive a key and those refused.
type Vectors struct {
	Keys    []Vector `json:"keys"`
	Refused []Vector `json:"refused"`
}

// Load reads the file, failing t when it cannot or when it has lost vectors.
func Load(t testing.TB) Vectors {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "testdata", "key-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v Vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Keys) < 20 || len(v.Refused) < 10 {
		t.Fatalf("%d keys and %d refusals: the file lost vectors", len(v.Keys), len(v.Refused))
	}
	return v
}
