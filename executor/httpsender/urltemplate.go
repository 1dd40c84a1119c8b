package httpsender

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// KeyPlaceholder is what a verify or precondition URL writes where the
// execution's key goes.
const KeyPlaceholder = "{key}"

// ErrKeyPlacement: a URL template has {key} where a key may not go.
var ErrKeyPlacement = errors.New("{key} may appear only in the path or the query")

// URLTemplate is a verify or precondition URL with {key} placeholders,
// parsed once. Each placeholder is escaped for the part of the URL it stands
// in, so the provider decodes exactly the key:
//
//   - in the path, with url.PathEscape: the key stays inside its path segment
//     (a / becomes %2F, a space %20, a ? %3F; a + stays a +);
//   - in the query, with url.QueryEscape: a space becomes +, a + %2B, an &
//     %26, as form decoding expects.
//
// {key} is refused in the scheme, user information, host and port (a key must
// never choose where a request goes) and in the fragment (it is never sent,
// so it could not tell one key from another).
type URLTemplate struct {
	raw   string
	parts []string              // the literal text around the placeholders
	holes []func(string) string // how each placeholder is escaped
}

// ParseURLTemplate parses an http or https URL template.
func ParseURLTemplate(s string) (*URLTemplate, error) {
	sample, err := url.Parse(strings.ReplaceAll(s, KeyPlaceholder, "k"))
	if err != nil {
		// Without the URL, which may carry a secret from the environment.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	if (sample.Scheme != "http" && sample.Scheme != "https") || sample.Host == "" {
		return nil, errors.New("must be an http or https URL")
	}
	// The placeholder holds none of : / ? #, so cutting the template where
	// url.Parse cuts it finds the part each placeholder is in.
	beforeFragment, fragment, hasFragment := strings.Cut(s, "#")
	if strings.Contains(fragment, KeyPlaceholder) {
		return nil, fmt.Errorf("%w: it is in the fragment, which is never sent", ErrKeyPlacement)
	}
	beforeQuery, query, hasQuery := strings.Cut(beforeFragment, "?")
	_, afterScheme, _ := strings.Cut(beforeQuery, "://")
	authority, _, _ := strings.Cut(afterScheme, "/")
	if pathStart := len(beforeQuery) - len(afterScheme) + len(authority); strings.Contains(beforeQuery[:pathStart], KeyPlaceholder) {
		return nil, fmt.Errorf("%w: it is in the scheme or host, and a key must never choose where a request goes", ErrKeyPlacement)
	}

	t := &URLTemplate{raw: s}
	literal := ""
	add := func(part string, escape func(string) string) {
		pieces := strings.Split(part, KeyPlaceholder)
		literal += pieces[0]
		for _, p := range pieces[1:] {
			t.parts = append(t.parts, literal)
			t.holes = append(t.holes, escape)
			literal = p
		}
	}
	add(beforeQuery, url.PathEscape)
	if hasQuery {
		literal += "?"
		add(query, url.QueryEscape)
	}
	if hasFragment {
		literal += "#" + fragment
	}
	t.parts = append(t.parts, literal)
	return t, nil
}

// Expand returns the URL for key.
func (t *URLTemplate) Expand(key string) string {
	if len(t.holes) == 0 {
		return t.parts[0]
	}
	var b strings.Builder
	for i, hole := range t.holes {
		b.WriteString(t.parts[i])
		b.WriteString(hole(key))
	}
	b.WriteString(t.parts[len(t.parts)-1])
	return b.String()
}

// String returns the template as written.
func (t *URLTemplate) String() string { return t.raw }
