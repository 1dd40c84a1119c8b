// Package intentkeytest reads the shared key vectors
// (internal/intentkey/testdata/key-vectors.json) for the tests of every
// implementation of the key: intentkey itself, `countersign key` and the Go
// client. The Python and TypeScript SDKs read the same file.
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

// Vectors are the file's intents that derive a key and those refused, and
// its client keys.
type Vectors struct {
	Keys       []Vector   `json:"keys"`
	Refused    []Vector   `json:"refused"`
	ClientKeys ClientKeys `json:"client_keys"`
}

// ClientKeys are client keys sent with the intent whose key is Derived:
// those countersign takes, and those it refuses (422 invalid_request).
type ClientKeys struct {
	Derived  string      `json:"derived"`
	Accepted []ClientKey `json:"accepted"`
	Refused  []ClientKey `json:"refused"`
}

// ClientKey is one client key of the file.
type ClientKey struct {
	Name string `json:"name"`
	Key  string `json:"key"`
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
	if len(v.Keys) < 20 || len(v.Refused) < 10 || len(v.ClientKeys.Accepted) < 10 || len(v.ClientKeys.Refused) < 30 {
		t.Fatalf("%d keys, %d refusals, %d client keys accepted and %d refused: the file lost vectors",
			len(v.Keys), len(v.Refused), len(v.ClientKeys.Accepted), len(v.ClientKeys.Refused))
	}
	return v
}
