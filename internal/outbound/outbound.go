// Package outbound words the failure of an HTTP call countersign makes (a
// dispatch, a verify or precondition check, a callback, a Slack API call)
// for the places people read it: an execution's last_error, a card's
// thread, a lookup answer, a callback or outbox row, a log line.
//
// Go's *url.Error carries the whole URL, query string and user information
// included, and a provider's URL may hold a secret (…?api_key=…, a webhook
// path). Every stored or shown outbound error goes through Describe, so none
// of them carries the URL.
package outbound

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// Describe says why an outbound call failed, without the URL it was made
// to: each *url.Error in err's tree is replaced by what it wraps ("dial tcp
// 127.0.0.1:9: connect: connection refused"), a deadline by "timed out".
// Whatever context err adds around them is kept. Should the URL still appear
// in the words (an error that formats it without a *url.Error), it is
// withheld too.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	var urls []string
	eachURLError(err, func(ue *url.Error) {
		urls = append(urls, ue.URL)
		inner := "failed"
		switch {
		case errors.Is(ue.Err, context.DeadlineExceeded):
			inner = "timed out"
		case ue.Err != nil:
			inner = ue.Err.Error()
		}
		msg = strings.ReplaceAll(msg, ue.Error(), inner)
	})
	for _, u := range urls {
		msg = withhold(msg, u)
	}
	return msg
}

// withheld stands where a URL, or its query, was.
const withheld = "(URL withheld)"

// withhold removes raw, in any form the standard library writes it, from
// msg; the query alone as well, where the secret usually is.
func withhold(msg, raw string) string {
	if raw == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, strconv.Quote(raw), withheld)
	msg = strings.ReplaceAll(msg, raw, withheld)
	if u, err := url.Parse(raw); err == nil {
		if u.RawQuery != "" {
			msg = strings.ReplaceAll(msg, u.RawQuery, withheld)
		}
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, withheld)
		}
	}
	return msg
}

// eachURLError calls f for every *url.Error in err's tree, outer ones
// first, so that an outer one's words are replaced before the inner ones
// they contain.
func eachURLError(err error, f func(*url.Error)) {
	if err == nil {
		return
	}
	if ue, ok := err.(*url.Error); ok {
		f(ue)
	}
	switch w := err.(type) {
	case interface{ Unwrap() error }:
		eachURLError(w.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range w.Unwrap() {
			eachURLError(e, f)
		}
	}
}
