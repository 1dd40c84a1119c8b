package signature

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// vectors is testdata/vectors.json, the examples every verifier passes
// (docs/CALLBACKS.md). Its headers were computed independently with
// Python's hmac module from the strings it lists.
type vectors struct {
	Tolerance int64 `json:"tolerance_seconds"`
	Signed    []struct {
		Name    string   `json:"name"`
		Secrets []string `json:"secrets"`
		T       int64    `json:"t"`
		sent
		Body     string `json:"body"`
		SignedV1 string `json:"signed_v1"`
		SignedV2 string `json:"signed_v2"`
		Header   string `json:"header"`
	} `json:"signed"`
	Checked []struct {
		Name   string `json:"name"`
		Secret string `json:"secret"`
		Now    int64  `json:"now"`
		sent
		Body   string `json:"body"`
		Header string `json:"header"`
		V1     bool   `json:"v1"`
		V2     bool   `json:"v2"`
	} `json:"checked"`
}

// sent is a vector's request, as the file spells it.
type sent struct {
	Method         string `json:"method"`
	Path           string `json:"path"`
	IdempotencyKey string `json:"idempotency_key"`
	Delivery       string `json:"delivery"`
}

func (s sent) request() Request { return Request(s) }

func readVectors(t *testing.T) vectors {
	t.Helper()
	raw, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Signed) < 6 || len(v.Checked) < 20 || v.Tolerance != 300 {
		t.Fatalf("%d signed and %d checked vectors, tolerance %d s", len(v.Signed), len(v.Checked), v.Tolerance)
	}
	return v
}

func keys(secrets []string) [][]byte {
	out := make([][]byte, len(secrets))
	for i, s := range secrets {
		out[i] = []byte(s) // a secret's bytes are its UTF-8 bytes, exactly
	}
	return out
}

// Sign produces every vector's header, over the strings the vector says,
// and each of its secrets verifies both schemes.
func TestSignedVectors(t *testing.T) {
	t.Parallel()
	v := readVectors(t)
	tolerance := time.Duration(v.Tolerance) * time.Second
	for _, s := range v.Signed {
		t.Run(s.Name, func(t *testing.T) {
			at := time.Unix(s.T, 0)
			ts := strings.TrimPrefix(strings.Split(s.Header, ",")[0], "t=")
			if got := string(SignedV1(ts, []byte(s.Body))); got != s.SignedV1 {
				t.Errorf("v1 signs %q, want %q", got, s.SignedV1)
			}
			if got := string(SignedV2(ts, s.request(), []byte(s.Body))); got != s.SignedV2 {
				t.Errorf("v2 signs %q, want %q", got, s.SignedV2)
			}
			if got := Sign(keys(s.Secrets), at, s.request(), []byte(s.Body)); got != s.Header {
				t.Errorf("Sign = %s\nwant   %s", got, s.Header)
			}
			for _, secret := range s.Secrets {
				if err := Verify([]byte(secret), s.Header, []byte(s.Body), at, tolerance); err != nil {
					t.Errorf("Verify with %q: %v", secret, err)
				}
				if err := VerifyRequest([]byte(secret), s.Header, s.request(), []byte(s.Body), at, tolerance); err != nil {
					t.Errorf("VerifyRequest with %q: %v", secret, err)
				}
			}
		})
	}
}

// Verify answers each checked vector's v1, and VerifyRequest its v2.
func TestCheckedVectors(t *testing.T) {
	t.Parallel()
	v := readVectors(t)
	tolerance := time.Duration(v.Tolerance) * time.Second
	for _, c := range v.Checked {
		t.Run(c.Name, func(t *testing.T) {
			now := time.Unix(c.Now, 0)
			v1 := Verify([]byte(c.Secret), c.Header, []byte(c.Body), now, tolerance)
			if (v1 == nil) != c.V1 || (v1 != nil && !errors.Is(v1, ErrBad)) {
				t.Errorf("Verify = %v, want accepted %v", v1, c.V1)
			}
			v2 := VerifyRequest([]byte(c.Secret), c.Header, c.request(), []byte(c.Body), now, tolerance)
			if (v2 == nil) != c.V2 || (v2 != nil && !errors.Is(v2, ErrBad)) {
				t.Errorf("VerifyRequest = %v, want accepted %v", v2, c.V2)
			}
		})
	}
}

func TestSignatureRoundTrip(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_760_000_000, 0)
	body := []byte(`{"a":1}`)
	req := Request{Method: "POST", Path: "/credits", IdempotencyKey: "wa_k"}
	secret := [][]byte{[]byte("s3cret")}
	sig := Sign(secret, now, req, body)
	if err := VerifyRequest(secret[0], sig, req, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Fatalf("valid signature refused: %v", err)
	}
	newline := req
	newline.Path = "/credits\nPOST"
	for name, bad := range map[string]func() error{
		"other body":   func() error { return VerifyRequest(secret[0], sig, req, []byte(`{"a":2}`), now, 5*time.Minute) },
		"other secret": func() error { return VerifyRequest([]byte("other"), sig, req, body, now, 5*time.Minute) },
		"too old":      func() error { return VerifyRequest(secret[0], sig, req, body, now.Add(time.Hour), 5*time.Minute) },
		"garbage":      func() error { return VerifyRequest(secret[0], "t=x,v2=zz", req, body, now, 5*time.Minute) },
		// A field with a newline could shift the fields after it; no
		// header or request line holds one, so nothing with one verifies.
		"a newline in a field": func() error {
			return VerifyRequest(secret[0], Sign(secret, now, newline, body), newline, body, now, 5*time.Minute)
		},
	} {
		if !errors.Is(bad(), ErrBad) {
			t.Errorf("%s: accepted", name)
		}
	}
	// The documented format: t=<unix>,v1=<hex>,v2=<hex>.
	if parts := strings.Split(sig, ","); len(parts) != 3 || parts[0] != "t=1760000000" ||
		!strings.HasPrefix(parts[1], "v1=") || !strings.HasPrefix(parts[2], "v2=") {
		t.Fatalf("signature %q", sig)
	}
}

// PathOf gives the path on the request line, whichever side of the wire
// the request is on.
func TestPathOf(t *testing.T) {
	t.Parallel()
	sent := func(u string) *http.Request {
		r, err := http.NewRequest(http.MethodPost, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	received := func(target string) *http.Request { return httptest.NewRequest(http.MethodPost, target, nil) }
	stripped := received("/hooks/countersign/x?y=1")
	stripped.URL.Path, stripped.URL.RawPath = "/x", ""
	for name, c := range map[string]struct {
		r    *http.Request
		want string
	}{
		"sent, with a query":           {sent("http://provider.internal/credits?api_key=x"), "/credits"},
		"sent, without a path":         {sent("http://provider.internal"), "/"},
		"sent, escaped":                {sent("http://provider.internal/v1/credits/inv%2F8841"), "/v1/credits/inv%2F8841"},
		"received":                     {received("/credits?x=1"), "/credits"},
		"received, escaped":            {received("/v1/credits/inv%2F8841"), "/v1/credits/inv%2F8841"},
		"received, absolute form":      {received("http://provider.internal/credits?x=1"), "/credits"},
		"received, after StripPrefix":  {stripped, "/hooks/countersign/x"},
		"received, an unneeded escape": {received("/cr%65dits"), "/cr%65dits"},
	} {
		if got := PathOf(c.r); got != c.want {
			t.Errorf("%s: PathOf = %q, want %q", name, got, c.want)
		}
	}
}

// FuzzVerify checks that no header verifies unless it carries the v1 (for
// Verify) or the v2 (for VerifyRequest) that Sign made.
func FuzzVerify(f *testing.F) {
	now := time.Unix(1_760_000_000, 0)
	body := []byte(`{"amount_cents":4200}`)
	req := Request{Method: "POST", Path: "/credits", IdempotencyKey: "wa_k"}
	good := Sign([][]byte{[]byte("k")}, now, req, body)
	parts := strings.Split(good, ",")
	v1, v2 := strings.TrimPrefix(parts[1], "v1="), strings.TrimPrefix(parts[2], "v2=")
	f.Add(good)
	f.Add("t=1760000000,v1=00")
	f.Add("v1=,t=")
	f.Add("t=1760000000,v1=zz,v1=" + v1)
	f.Add("t=1760000000,v2=" + strings.ToUpper(v2))
	f.Add("t=1760000000,t=1760000000,v2=" + v2)
	f.Fuzz(func(t *testing.T, header string) {
		// Several values are allowed (secret rotation); the right one must
		// then be among them.
		if Verify([]byte("k"), header, body, now, 5*time.Minute) == nil && !strings.Contains(header, v1) {
			t.Fatalf("header %q verified as v1", header)
		}
		if VerifyRequest([]byte("k"), header, req, body, now, 5*time.Minute) == nil && !strings.Contains(header, v2) {
			t.Fatalf("header %q verified as v2", header)
		}
	})
}
