package approvals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
)

// bundleSchema returns the schema document doc (found at base) with every
// file its $refs name, and every file those name, copied under its $defs
// and each $ref rewritten to point there: one document with no $ref that
// leaves it, which an agent or an MCP runtime can use as it is. Only
// JSON-pointer fragments are followed, and only files: nothing is fetched
// over the network.
func bundleSchema(doc map[string]any, base *url.URL) (map[string]any, error) {
	b := &bundler{root: doc, names: map[string]string{}}
	if defs, ok := doc["$defs"].(map[string]any); ok {
		for name := range defs {
			b.taken(name)
		}
	}
	if err := b.rewrite(doc, base, ""); err != nil {
		return nil, err
	}
	return doc, nil
}

type bundler struct {
	root map[string]any
	// names maps each file bundled (by URL) to its name under $defs.
	names map[string]string
	used  map[string]bool
}

func (b *bundler) taken(name string) {
	if b.used == nil {
		b.used = map[string]bool{}
	}
	b.used[name] = true
}

// rewrite walks v, a part of the document found at base that is bundled
// under prefix ("" for the root), rewriting its $refs.
func (b *bundler) rewrite(v any, base *url.URL, prefix string) error {
	switch v := v.(type) {
	case map[string]any:
		if prefix != "" {
			// A bundled file's own id and dialect would change how the
			// rewritten refs resolve; they are the root's now.
			delete(v, "$id")
			delete(v, "$schema")
		}
		for key, child := range v {
			if ref, ok := child.(string); ok && key == "$ref" {
				target, err := b.target(ref, base, prefix)
				if err != nil {
					return err
				}
				v[key] = target
				continue
			}
			if err := b.rewrite(child, base, prefix); err != nil {
				return err
			}
		}
	case []any:
		for _, child := range v {
			if err := b.rewrite(child, base, prefix); err != nil {
				return err
			}
		}
	}
	return nil
}

// target is where ref, written in the part bundled under prefix, points in
// the bundle.
func (b *bundler) target(ref string, base *url.URL, prefix string) (string, error) {
	u, err := base.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("$ref %q: %w", ref, err)
	}
	if u.Fragment != "" && !strings.HasPrefix(u.Fragment, "/") {
		return "", fmt.Errorf("$ref %q: only JSON-pointer fragments (#/…) can be bundled", ref)
	}
	file := *u
	file.Fragment, file.RawFragment = "", ""
	if file.String() == stripFragment(base) {
		return "#" + prefix + u.Fragment, nil
	}
	if file.Scheme != "file" {
		return "", fmt.Errorf("$ref %q: only files beside the schema are read, nothing over the network", ref)
	}
	name, err := b.include(&file)
	if err != nil {
		return "", fmt.Errorf("$ref %q: %w", ref, err)
	}
	return "#/$defs/" + escapePointer(name) + u.Fragment, nil
}

// include copies the file at u under the root's $defs, once, and returns
// its name there.
func (b *bundler) include(u *url.URL) (string, error) {
	if name, ok := b.names[u.String()]; ok {
		return name, nil
	}
	raw, err := os.ReadFile(u.Path)
	if err != nil {
		return "", err
	}
	var doc any
	if err := decodeSchema(raw, &doc); err != nil {
		return "", fmt.Errorf("%s is not JSON: %w", u.Path, err)
	}
	name := strings.TrimSuffix(path.Base(u.Path), ".json")
	for i := 2; b.used[name]; i++ {
		name = strings.TrimSuffix(path.Base(u.Path), ".json") + "_" + strconv.Itoa(i)
	}
	b.taken(name)
	b.names[u.String()] = name
	defs, _ := b.root["$defs"].(map[string]any)
	if defs == nil {
		defs = map[string]any{}
		b.root["$defs"] = defs
	}
	defs[name] = doc
	return name, b.rewrite(doc, u, "/$defs/"+escapePointer(name))
}

// decodeSchema decodes a schema document keeping its numbers as written
// (a float64 would round a bound such as 9007199254740993).
func decodeSchema(raw []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(into); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}

func stripFragment(u *url.URL) string {
	c := *u
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}

func escapePointer(token string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
}
