package namedsql

import (
	"testing"
	"testing/fstest"
)

func TestLoadExpandsIncludes(t *testing.T) {
	fsys := fstest.MapFS{"q.sql": {Data: []byte(`-- header comment

-- name: cols
id, key

-- name: by_key
-- a comment stays with its statement
SELECT {{cols}} FROM requests WHERE key = $1;
`)}}
	q := MustLoad(fsys, "q.sql")
	if got, want := q.Get("by_key"), "-- a comment stays with its statement\nSELECT id, key FROM requests WHERE key = $1"; got != want {
		t.Errorf("by_key = %q, want %q", got, want)
	}
}

func TestLoadRefusesMistakes(t *testing.T) {
	for name, text := range map[string]string{
		"named twice":     "-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n",
		"unknown include": "-- name: a\nSELECT {{b}};\n",
		"self include":    "-- name: a\nSELECT {{a}};\n",
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			MustLoad(fstest.MapFS{"q.sql": {Data: []byte(text)}}, "q.sql")
		}()
	}
	defer func() {
		if recover() == nil {
			t.Error("Get of a missing statement: no panic")
		}
	}()
	MustLoad(fstest.MapFS{"q.sql": {Data: []byte("-- name: a\nSELECT 1;\n")}}, "q.sql").Get("b")
}
