package executor_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/executor"
)

func TestURLTemplateEscapesTheKeyForItsPart(t *testing.T) {
	t.Parallel()
	const base = "https://billing.example/v1"
	rows := []struct {
		key, path, query string
	}{
		{"inv 42 credit", "inv%2042%20credit", "inv+42+credit"},
		{"inv/42/credit", "inv%2F42%2Fcredit", "inv%2F42%2Fcredit"},
		{"inv%42%credit", "inv%2542%25credit", "inv%2542%25credit"},
		{"inv+42+credit", "inv+42+credit", "inv%2B42%2Bcredit"},
		{"inv?42?credit", "inv%3F42%3Fcredit", "inv%3F42%3Fcredit"},
		{"inv#42#credit", "inv%2342%23credit", "inv%2342%23credit"},
		{"inv&42=credit", "inv&42=credit", "inv%2642%3Dcredit"},
		{"wa_7f3c9a1e", "wa_7f3c9a1e", "wa_7f3c9a1e"},
	}
	pathT, err := executor.ParseURLTemplate(base + "/objects/{key}/status?expand=1")
	if err != nil {
		t.Fatal(err)
	}
	queryT, err := executor.ParseURLTemplate(base + "/objects?key={key}&v=2#top")
	if err != nil {
		t.Fatal(err)
	}
	bothT, err := executor.ParseURLTemplate(base + "/k/{key}?again={key}")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		got := pathT.Expand(row.key)
		if want := base + "/objects/" + row.path + "/status?expand=1"; got != want {
			t.Errorf("path, key %q: %s, want %s", row.key, got, want)
		}
		// What a provider decodes is exactly the key, still one segment.
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("key %q: %v", row.key, err)
		}
		segs := strings.Split(u.EscapedPath(), "/")
		if len(segs) != 5 {
			t.Errorf("path, key %q: %d segments in %s, want the key in one", row.key, len(segs), u.EscapedPath())
		} else if dec, err := url.PathUnescape(segs[3]); err != nil || dec != row.key {
			t.Errorf("path, key %q: the provider decodes %q (%v)", row.key, dec, err)
		}
		if u.RawQuery != "expand=1" || u.Fragment != "" {
			t.Errorf("path, key %q: query %q fragment %q", row.key, u.RawQuery, u.Fragment)
		}

		got = queryT.Expand(row.key)
		if want := base + "/objects?key=" + row.query + "&v=2#top"; got != want {
			t.Errorf("query, key %q: %s, want %s", row.key, got, want)
		}
		if u, err = url.Parse(got); err != nil {
			t.Fatalf("key %q: %v", row.key, err)
		}
		if q := u.Query(); q.Get("key") != row.key || q.Get("v") != "2" || len(q) != 2 {
			t.Errorf("query, key %q: the provider decodes %v", row.key, q)
		}

		if got, want := bothT.Expand(row.key), base+"/k/"+row.path+"?again="+row.query; got != want {
			t.Errorf("both, key %q: %s, want %s", row.key, got, want)
		}
	}
}

func TestURLTemplateWithoutAKey(t *testing.T) {
	t.Parallel()
	const s = "http://127.0.0.1:9090/precondition?x=1#f"
	tmpl, err := executor.ParseURLTemplate(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := tmpl.Expand("inv 42 credit"); got != s {
		t.Fatalf("%s, want %s", got, s)
	}
	if tmpl.String() != s {
		t.Fatalf("String() = %s", tmpl.String())
	}
}

func TestURLTemplateRefusesAKeyOutsideThePathAndQuery(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"http://{key}.billing.example/objects",
		"http://billing.example.{key}/objects",
		"http://{key}@billing.example/objects",
		"http://user:{key}@billing.example/objects",
		"http://billing.example/objects#{key}",
		"http://billing.example/objects?key=1#x{key}",
	} {
		_, err := executor.ParseURLTemplate(s)
		if !errors.Is(err, executor.ErrKeyPlacement) {
			t.Errorf("%s: err %v, want ErrKeyPlacement", s, err)
		}
	}
	for _, s := range []string{
		"http://billing.example:{key}/objects", // not even a URL
		"{key}://billing.example/objects",
		"ftp://billing.example/objects/{key}",
		"/objects/{key}",
		"http:///objects/{key}",
	} {
		if _, err := executor.ParseURLTemplate(s); err == nil {
			t.Errorf("%s: accepted", s)
		}
	}
}

func TestEndpointURLForReportsABadTemplate(t *testing.T) {
	t.Parallel()
	ep := executor.Endpoint{URL: "http://{key}.billing.example/objects"}
	if _, err := ep.URLFor("inv 42 credit"); !errors.Is(err, executor.ErrKeyPlacement) {
		t.Fatalf("err %v, want ErrKeyPlacement", err)
	}
	ep = executor.Endpoint{URL: "http://billing.example/objects/{key}"}
	if u, err := ep.URLFor("inv 42 credit"); err != nil || u != "http://billing.example/objects/inv%2042%20credit" {
		t.Fatalf("%s, %v", u, err)
	}
}

// TestURLTemplateRoundTripsEveryPrintableCharacter: whatever printable ASCII
// a client key holds, the provider decodes exactly that key from the path
// segment and from the query.
func TestURLTemplateRoundTripsEveryPrintableCharacter(t *testing.T) {
	t.Parallel()
	tmpl, err := executor.ParseURLTemplate("http://billing.example/objects/{key}?key={key}")
	if err != nil {
		t.Fatal(err)
	}
	for c := byte(0x20); c <= 0x7e; c++ {
		key := "inv" + string(c) + "42" + string(c) + "credit"
		u, err := url.Parse(tmpl.Expand(key))
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		seg, ok := strings.CutPrefix(u.EscapedPath(), "/objects/")
		if !ok || strings.Contains(seg, "/") {
			t.Errorf("key %q: path %s", key, u.EscapedPath())
			continue
		}
		if dec, err := url.PathUnescape(seg); err != nil || dec != key {
			t.Errorf("key %q: the path decodes to %q (%v)", key, dec, err)
		}
		if q := u.Query(); q.Get("key") != key || len(q) != 1 {
			t.Errorf("key %q: the query decodes to %v", key, q)
		}
	}
}
