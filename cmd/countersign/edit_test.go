package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An approver edits a pending request from the command line: the edit is
// a new request with its own key, approved and executed; the original
// settles edited, names the edit, and never executes.
func TestEditFromTheCommandLineWhileServeRuns(t *testing.T) {
	t.Parallel()
	p, dir := startLocalRun(t)
	post, read := localRunAgent(t, p, dir, "run-edit")
	env := map[string]string{"COUNTERSIGN_DATA_DIR": dir}
	type view struct {
		Key          string         `json:"key"`
		Status       string         `json:"status"`
		Effect       map[string]any `json:"effect"`
		Supersedes   string         `json:"supersedes"`
		SupersededBy string         `json:"superseded_by"`
		Settled      bool           `json:"settled"`
		Execution    *struct {
			State    string `json:"state"`
			Attempts int    `json:"attempts"`
		} `json:"execution"`
	}
	get := func(ref, query string) view {
		t.Helper()
		code, body := read("/v1/requests/" + ref + query)
		var v view
		if code != http.StatusOK || json.Unmarshal(body, &v) != nil {
			t.Fatalf("GET %s = %d %s", ref, code, body)
		}
		return v
	}

	original := post(1)
	code, out, errs := decideLocally(t, env, "edit", original.Key[:12], "--effect", `{"order": "ord_1001", "amount_cents": 900, "currency": "EUR"}`)
	if code != 0 || !strings.HasPrefix(out, "edited "+original.ID) || !strings.Contains(out, "changed amount_cents") ||
		!strings.HasSuffix(strings.TrimSpace(out), ", approved") {
		t.Fatalf("edit = %d, %q, %q", code, out, errs)
	}
	was := get(original.Key, "")
	if was.Status != "edited" || !was.Settled || was.SupersededBy == "" || was.SupersededBy == original.Key ||
		!strings.Contains(out, was.SupersededBy) {
		t.Fatalf("the original after the edit = %+v (edit said %q)", was, out)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		v := get(was.SupersededBy, "?wait=5s")
		if v.Execution != nil && v.Execution.State == "succeeded" {
			if v.Status != "approved" || v.Supersedes != original.Key || v.Effect["amount_cents"] != float64(900) ||
				v.Execution.Attempts != 1 {
				t.Fatalf("the edit = %+v", v)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the edit never executed: %+v\n%s", v, p.logs.String())
		}
	}
	if v := get(original.Key, ""); v.Execution != nil && v.Execution.State != "superseded" {
		t.Fatalf("the original executed: %+v", v)
	}

	// The original is settled: a second edit, or an approval, changes nothing.
	if code, out, errs := decideLocally(t, env, "edit", original.ID, "--effect", `{"order": "ord_1001", "amount_cents": 800, "currency": "EUR"}`); code != 1 || out != "" || !strings.Contains(errs, "already_decided: ") {
		t.Fatalf("second edit = %d, %q, %q", code, out, errs)
	}
	// An effect the tool's schema refuses, and one that is the request's own.
	pending := post(2)
	for _, effect := range []string{
		`{"order": "ord_1001", "amount_cents": -5, "currency": "EUR"}`,
		`{"order": "ord_1001", "amount_cents": 1250, "currency": "EUR"}`,
	} {
		if code, out, errs := decideLocally(t, env, "edit", pending.ID, "--effect", effect); code != 1 || out != "" || errs == "" {
			t.Errorf("edit to %s = %d, %q, %q", effect, code, out, errs)
		}
	}
	if v := get(pending.Key, ""); v.Status != "pending" {
		t.Fatalf("a refused edit changed the request: %+v", v)
	}
	// Someone the configuration does not name as a local reviewer.
	if code, _, errs := decideLocally(t, env, "edit", "--as", "local:mallory", "--effect", `{"order": "ord_1001", "amount_cents": 1, "currency": "EUR"}`, pending.ID); code != 1 || !strings.Contains(errs, "not_approver") {
		t.Errorf("edit as local:mallory = %d, %q", code, errs)
	}
}

// The edit command's arguments are checked before anything is sent.
func TestEditArguments(t *testing.T) {
	t.Parallel()
	env := map[string]string{"COUNTERSIGN_DATA_DIR": t.TempDir()}
	for _, args := range [][]string{
		{"edit", "wa_0123456789ab"},
		{"edit", "--effect", `{"a": 1}`},
		{"edit", "wa_0123456789ab", "--effect", `[1, 2]`},
		{"edit", "wa_0123456789ab", "--effect", `{"a": `},
		{"edit", "wa_0123456789ab", "--effect", `{"a": "` + strings.Repeat("x", maxEditEffect) + `"}`},
	} {
		if code, out, errs := decideLocally(t, env, args...); code != 2 || out != "" || !strings.Contains(errs, "countersign edit: ") {
			t.Errorf("%q = %d, %q, %q", args, code, out, errs)
		}
	}
	code, out, _ := decideLocally(t, env, "edit", "--help")
	if code != 0 || out != editUsage {
		t.Errorf("edit --help = %d, %q", code, out)
	}
}
