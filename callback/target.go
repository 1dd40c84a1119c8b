package callback

import (
	"errors"
	"fmt"
	"net/url"
)

// Target is where one agent's callbacks go. The URL comes only from the
// operator's configuration, never from a request.
type Target struct {
	URL string
	// Secrets sign every callback: each adds a v1 and a v2 to the header,
	// so while one is rotated an agent holding either verifies.
	Secrets [][]byte
}

// Validate reports what is wrong with t: the URL must be absolute http or
// https with a host, and there must be a secret, none of them empty. The
// message never holds a secret.
func (t Target) Validate() error {
	var errs []error
	u, err := url.Parse(t.URL)
	switch {
	case t.URL == "":
		errs = append(errs, errors.New("callback.url is required"))
	case err != nil:
		errs = append(errs, fmt.Errorf("callback.url does not parse: %w", err))
	case u.Scheme == "" || u.Host == "":
		errs = append(errs, errors.New("callback.url must be absolute, with http or https and a host"))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, fmt.Errorf("callback.url must be http or https, not %q", u.Scheme))
	case u.User != nil:
		errs = append(errs, errors.New("callback.url must not hold credentials; the signature authenticates the call"))
	}
	if len(t.Secrets) == 0 {
		errs = append(errs, errors.New("callback.secret is required (it may be ${VAR} from the environment)"))
	}
	for i, s := range t.Secrets {
		if len(s) == 0 {
			errs = append(errs, fmt.Errorf("callback.secret: value %d of %d is empty", i+1, len(t.Secrets)))
		}
	}
	return errors.Join(errs...)
}
