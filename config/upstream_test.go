package config

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
)

const upstreamAgent = `
agents:
  - name: ops-agent
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
`

// An upstream's gated tools are reviewed with its settings, their effects
// held to their input schemas, and executed by the sender given, their
// claims outlasting a call; its reads are not tools at all.
func TestUpstreamToolsAreReviewedWithTheirUpstreamsSettings(t *testing.T) {
	t.Parallel()
	cfg := loadVerdictFile(t, upstreamAgent+`
upstreams:
  fs:
    command: [node, server.js, /srv/shared]
    reads: [read_text_file]
    call_timeout: 3m
    hold: 10s
    approvers: [U0OPS, U0LEAD]
    approvals: 2
    tiers:
      - name: scratch
        when: 'effect.path.startsWith("/srv/shared/tmp/")'
        approvals: 0
`).WithDefaults()
	list := []UpstreamTool{
		{Upstream: "fs", Exposed: "fs__write_file", Description: "Writes a file.",
			InputSchema: json.RawMessage(`{"type":"object","required":["path","content"],"properties":{"path":{"type":"string"},"content":{"type":"string"}}}`)},
		{Upstream: "fs", Exposed: "fs__read_text_file", Read: true},
	}
	review, errs := cfg.UpstreamReviewTools(list)
	if len(errs) != 0 || len(review) != 1 {
		t.Fatalf("review tools %v, problems %v; want fs__write_file alone", review, errs)
	}
	w := review["fs__write_file"]
	if w.Approvals != 2 || len(w.Approvers) != 2 || len(w.Tiers) != 1 || w.EffectSchema == nil || w.Version == "" {
		t.Errorf("fs__write_file in review = %+v", w)
	}
	if err := w.EffectSchema.Check([]byte(`{"path":"/srv/shared/a"}`)); err == nil {
		t.Error("an effect without its content passed the tool's input schema")
	}
	in, err := approvals.NewPolicyInput([]byte(`{"path":"/srv/shared/tmp/x","content":"y"}`), "fs__write_file", "ops-agent", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p := w.Evaluate(in).Policy; p.Verdict != approvals.VerdictAllow || p.TierName != "scratch" {
		t.Errorf("a scratch write's policy = %+v, want allowed by scratch", p)
	}
	exec := cfg.UpstreamExecutorTools(list, nil)
	if e, ok := exec["fs__write_file"]; !ok || len(exec) != 1 || e.Timeout != 3*time.Minute || e.ClaimTimeout != 4*time.Minute || e.Recheck == nil {
		t.Errorf("executor tools = %+v", exec)
	}
	if hold := cfg.UpstreamHold("fs"); hold != 10*time.Second {
		t.Errorf("hold = %s", hold)
	}
}

// Every problem of an upstream is named under upstreams.<name>.
func TestUpstreamProblems(t *testing.T) {
	t.Parallel()
	got := strings.Join(loadProblems(t, upstreamAgent+`
upstreams:
  both:
    command: [node]
    url: http://127.0.0.1:9/mcp
    approvers: [U0OPS]
  neither:
    approvers: [U0OPS]
  Bad__Name:
    url: http://127.0.0.1:9/mcp
    approvers: [U0OPS]
  sends:
    url: http://127.0.0.1:9/mcp
    approvers: [U0OPS]
    dispatch: {url: "http://127.0.0.1:9/x"}
  nobody:
    url: http://127.0.0.1:9/mcp
  piped:
    command: [node]
    headers: {Authorization: "Bearer x"}
    approvers: [U0OPS]
`, nil), "\n")
	for _, want := range []string{
		"upstreams.both: set command or url, not both",
		"upstreams.neither: set command",
		"upstreams.Bad__Name: the name must be",
		"upstreams.sends: dispatch, execute, verify",
		"upstreams.nobody: approvers is empty",
		"upstreams.piped: headers go with url",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no problem %q in:\n%s", want, got)
		}
	}
}
