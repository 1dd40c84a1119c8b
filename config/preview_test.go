package config

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
)

func TestPreviewConfig(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, validAgent+`
tools:
  billing.credit:
    approvers: [U024BE7LH]
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s, secret: tool-secret}
    preview: {url: "http://127.0.0.1:9/preview"}
    business_id: invoice
  notes.add:
    approvers: [U024BE7LH]
    dispatch: {method: POST, url: "http://127.0.0.1:9/notes", timeout: 5s}
    preview: {url: "https://notes.example.com/preview", timeout: 7s}
  plain:
    approvers: [U024BE7LH]
    dispatch: {method: POST, url: "http://127.0.0.1:9/plain", timeout: 5s}
`)
	cfg, err := Load(envFrom(emailEnv(path)))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tools := cfg.ReviewTools()
	credit := tools["billing.credit"]
	if p := credit.Preview; p == nil || p.URL != "http://127.0.0.1:9/preview" || p.Timeout != approvals.DefaultPreviewTimeout ||
		len(p.Secrets) != 1 || string(p.Secrets[0]) != "tool-secret" || credit.BusinessID != "invoice" {
		t.Errorf("billing.credit preview = %+v, business id %q", p, credit.BusinessID)
	}
	if p := tools["notes.add"].Preview; p == nil || p.Timeout != 7*time.Second || len(p.Secrets) != 1 || string(p.Secrets[0]) != "s" {
		t.Errorf("notes.add preview = %+v; want 7s, signed with COUNTERSIGN_DISPATCH_SECRET", p)
	}
	if p := tools["plain"].Preview; p != nil {
		t.Errorf("plain has a preview: %+v", p)
	}
	if s := credit.Preview.String(); strings.Contains(s, "tool-secret") {
		t.Errorf("the endpoint prints its secret: %s", s)
	}
}

func TestPreviewConfigErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ preview, want string }{
		{`preview: {url: "http://previews.example.com/p"}`, "preview.url must be https"},
		{`preview: {url: "ftp://127.0.0.1/p"}`, "preview.url must be an https URL"},
		{`preview: {url: ""}`, "preview.url is empty"},
		{`preview: {url: "https://u:p@previews.example.com/p"}`, "preview.url must not hold a user or password"},
		{`preview: {url: "https://previews.example.com/p", timeout: 11s}`, "preview.timeout (11s) must be between 0"},
		{`preview: {url: "https://previews.example.com/p", timeout: -1s}`, "preview.timeout (-1s)"},
		{`business_id: "a b"`, `business_id "a b" must name one top-level field`},
	} {
		path := writeConfig(t, validAgent+`
tools:
  billing.credit:
    approvers: [U024BE7LH]
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
    `+c.preview+`
`)
		cfg, err := Load(envFrom(emailEnv(path)))
		if err != nil {
			t.Fatal(err)
		}
		err = cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "tools.billing.credit: "+c.want) {
			t.Errorf("%s: Validate = %v; want %q", c.preview, err, c.want)
		}
	}

	// Nothing to sign a preview with.
	path := writeConfig(t, validAgent+`
tools:
  agent.write:
    approvers: [U024BE7LH]
    execute: agent
    preview: {url: "https://previews.example.com/p"}
`)
	env := emailEnv(path)
	delete(env, "COUNTERSIGN_DISPATCH_SECRET")
	cfg, err := Load(envFrom(env))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "tools.agent.write: preview is signed as a dispatch is") {
		t.Errorf("Validate = %v; want the missing secret named", err)
	}
}

// An upstream's gated tools take its preview and business id, signed with
// COUNTERSIGN_DISPATCH_SECRET; a bad one is named under the upstream.
func TestUpstreamPreview(t *testing.T) {
	t.Parallel()
	cfg := loadVerdictFile(t, upstreamAgent+`
upstreams:
  fs:
    command: [node, server.js]
    approvers: [U0OPS]
    preview: {url: "https://fs.example.com/preview", timeout: 3s}
    business_id: path
`).WithDefaults()
	review, errs := cfg.UpstreamReviewTools([]UpstreamTool{{Upstream: "fs", Exposed: "fs__write_file"}})
	w := review["fs__write_file"]
	if len(errs) != 0 || w.Preview == nil || w.Preview.Timeout != 3*time.Second || len(w.Preview.Secrets) != 1 || w.BusinessID != "path" {
		t.Fatalf("fs__write_file = %+v, %v", w, errs)
	}

	path := writeConfig(t, upstreamAgent+`
upstreams:
  fs:
    command: [node, server.js]
    approvers: [U0OPS]
    preview: {url: "http://fs.example.com/preview"}
`)
	bad, err := Load(envFrom(emailEnv(path)))
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "upstreams.fs: preview.url must be https") {
		t.Errorf("Validate = %v; want the upstream's preview named", err)
	}
}
