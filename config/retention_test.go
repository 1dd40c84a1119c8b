package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestRetentionWindows(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"90d": 90 * 24 * time.Hour, "1d": 24 * time.Hour, "36h": 36 * time.Hour, "1s": time.Second, "2h30m": 150 * time.Minute,
	} {
		if got, err := ParseWindow(in); err != nil || got != want {
			t.Errorf("ParseWindow(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0d", "500ms", "0s", "-1h", "d", "90days", "1.5d", "ninety"} {
		if got, err := ParseWindow(in); err == nil {
			t.Errorf("ParseWindow(%q) = %v, want a refusal", in, got)
		}
	}
}

// config check prints a window as the file would write it.
func TestRetentionWindowPrintsAsWritten(t *testing.T) {
	t.Parallel()
	for w, want := range map[Window]string{Window(90 * 24 * time.Hour): "requests: 90d\n", Window(36 * time.Hour): "requests: 36h0m0s\n",
		Window(time.Second): "requests: 1s\n"} {
		out, err := yaml.Marshal(RetentionConfig{Requests: w})
		if err != nil || !strings.HasPrefix(string(out), want) {
			t.Errorf("%v prints as %q, %v; want %q", time.Duration(w), out, err, want)
		}
		if d, err := ParseWindow(strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(out), "\n", 2)[0], "requests:"))); err != nil || d != time.Duration(w) {
			t.Errorf("%v printed does not read back: %v, %v", time.Duration(w), d, err)
		}
	}
}

func TestRetentionConfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "countersign.yml")
	if err := os.WriteFile(path, []byte(validAgent+validTool+"retention:\n  requests: 90d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_DISPATCH_SECRET": "s",
		"COUNTERSIGN_DATA_DIR": t.TempDir(), "COUNTERSIGN_LISTEN": "127.0.0.1:8080"}))
	if err != nil || cfg.Validate() != nil {
		t.Fatalf("LoadConfig = %v, Validate = %v", err, cfg.Validate())
	}
	if r := cfg.File.Retention; time.Duration(r.Requests) != 90*24*time.Hour || r.Schedule != DefaultRetentionSchedule {
		t.Errorf("retention = %+v", r)
	}

	// Each problem names the line it is on (the agent and the tool take
	// lines 2 to 9 of the file).
	got := loadProblems(t, validAgent+validTool+"retention:\n  requests: 500ms\n  schedule: sometimes\n", nil)
	want := []string{
		`FILE: line 11, column 13: retention.requests: "500ms" is shorter than 1s`,
		`FILE: line 12, column 3: retention.schedule "sometimes" is not a cron schedule (use a 5-field spec or @every 10m): expected exactly 5 fields, found 1: [sometimes]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems = %q\nwant %q", got, want)
	}
	got = loadProblems(t, validAgent+validTool+"retention:\n  requests: [90d]\n  audits: 400d\n", nil)
	want = []string{
		`FILE: line 11, column 13: retention.requests: must be a window such as 90d, 36h or 30s`,
		`FILE: line 12, column 3: retention.audits: unknown field; did you mean audit?`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems = %q\nwant %q", got, want)
	}
}

// The audit window is read like the requests' one and must outlive it; the
// verification's schedule is a cron schedule.
func TestRetentionAuditWindow(t *testing.T) {
	t.Parallel()
	r := RetentionConfig{Requests: Window(90 * 24 * time.Hour), Audit: Window(400 * 24 * time.Hour), Schedule: "@every 10m",
		VerifySchedule: "@daily"}
	if err := r.Validate(); err != nil {
		t.Errorf("400d beside 90d: %v", err)
	}
	r.Audit = Window(30 * 24 * time.Hour)
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "retention.audit (720h0m0s) is shorter than retention.requests (2160h0m0s)") {
		t.Errorf("30d beside 90d: %v", err)
	}
	r.Audit, r.VerifySchedule = Window(400*24*time.Hour), "now and then"
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "retention.verify_schedule") {
		t.Errorf("a verify_schedule that is no schedule: %v", err)
	}
	out, err := yaml.Marshal(RetentionConfig{Audit: Window(400 * 24 * time.Hour)})
	if err != nil || !strings.Contains(string(out), "audit: 400d\n") {
		t.Errorf("retention.audit prints as %q, %v", out, err)
	}
}
