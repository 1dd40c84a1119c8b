package outbound_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/outbound"
)

const planted = "SUPERSECRET123"

// closedURL is an address nothing listens on, with a secret in its query.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://user:pa55word@" + addr + "/credits?api_key=" + planted
}

// A real failed call says why without the URL, its query or its password.
func TestDescribeWithholdsTheURLOfARealFailure(t *testing.T) {
	t.Parallel()
	u := closedURL(t)
	_, err := (&http.Client{Timeout: 2 * time.Second}).Get(u)
	if err == nil {
		t.Fatal("a GET to a closed port succeeded")
	}
	if !strings.Contains(err.Error(), planted) {
		t.Fatalf("the premise is gone: Go's error no longer carries the URL: %v", err)
	}
	got := outbound.Describe(err)
	for _, leak := range []string{planted, "api_key", "pa55word", "/credits"} {
		if strings.Contains(got, leak) {
			t.Errorf("Describe = %q, carries %q", got, leak)
		}
	}
	if !strings.Contains(got, "connection refused") {
		t.Errorf("Describe = %q, does not say why", got)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	const u = "https://api.example.com/v1/credits?api_key=" + planted
	refused := errors.New("dial tcp 10.0.0.1:443: connect: connection refused")
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"no URL", errors.New("unexpected EOF"), "unexpected EOF"},
		{"url.Error", &url.Error{Op: "Post", URL: u, Err: refused}, refused.Error()},
		{"wrapped, context kept", fmt.Errorf("the verify URL could not be read: %w", &url.Error{Op: "Get", URL: u, Err: refused}),
			"the verify URL could not be read: " + refused.Error()},
		{"deadline", &url.Error{Op: "Post", URL: u, Err: context.DeadlineExceeded}, "timed out"},
		{"nested", &url.Error{Op: "Get", URL: u, Err: &url.Error{Op: "Get", URL: u + "&page=2", Err: refused}}, refused.Error()},
		{"joined", errors.Join(errors.New("first"), &url.Error{Op: "Get", URL: u, Err: refused}), "first\n" + refused.Error()},
		{"URL in the inner words", &url.Error{Op: "Get", URL: u, Err: fmt.Errorf("redirect to %s refused", u)}, "redirect to (URL withheld) refused"},
		{"query in the inner words", &url.Error{Op: "Get", URL: u, Err: errors.New("bad query api_key=" + planted)}, "bad query (URL withheld)"},
	}
	for _, tc := range cases {
		if got := outbound.Describe(tc.err); got != tc.want {
			t.Errorf("%s: Describe = %q, want %q", tc.name, got, tc.want)
		}
	}
}
