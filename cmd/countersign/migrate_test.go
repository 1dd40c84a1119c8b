package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/migrations"
	"github.com/countersign/countersign/store/storetest"
)

// runMigrate runs `countersign migrate args…` with env and returns its exit
// code and output.
func runMigrate(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"migrate"}, args...), envFrom(env), nil, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestMigrateFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"COUNTERSIGN_DATA_DIR": dir}
	for _, help := range []string{"--help", "-h", "-help"} {
		code, stdout, stderr := runMigrate(t, env, help)
		if code != 0 || !strings.Contains(stdout, "usage: countersign migrate [--app-role NAME]") || stderr != "" {
			t.Errorf("migrate %s: exit %d\nstdout: %s\nstderr: %s", help, code, stdout, stderr)
		}
	}
	for args, want := range map[string]string{
		"--bogus":            "flag provided but not defined: -bogus",
		"--app-role":         "flag needs an argument: -app-role",
		"now":                `unexpected argument "now"`,
		"--app-role x extra": `unexpected argument "extra"`,
		"--app-role=x --b=1": "flag provided but not defined: -b",
	} {
		code, stdout, stderr := runMigrate(t, env, strings.Fields(args)...)
		if code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "usage: countersign migrate") || stdout != "" {
			t.Errorf("migrate %s: exit %d, want 2 saying %q\nstdout: %s\nstderr: %s", args, code, want, stdout, stderr)
		}
	}
	// Refused before anything is touched: a bad name, and roles without PostgreSQL.
	for args, want := range map[string]string{
		"--app-role Countersign": "invalid role name",
		"--app-role pg_serve":    "reserved",
		"--app-role countersign": "--app-role needs PostgreSQL",
	} {
		code, _, stderr := runMigrate(t, env, strings.Fields(args)...)
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("migrate %s: exit %d, want 1 saying %q: %s", args, code, want, stderr)
		}
	}
}

// A right granted to PUBLIC is the app role's too: migrate --app-role
// takes it back and says so, and the role can no longer use it.
func TestMigrateAppRoleRevokesWhatPublicHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ownerURL := storetest.NewEmptyURL(t)
	role := storetest.NewRoleName(t, ownerURL)
	ownerEnv := map[string]string{"COUNTERSIGN_DATABASE_URL": ownerURL}
	if code, stdout, stderr := runMigrate(t, ownerEnv, "--app-role", role); code != 0 || strings.Contains(stdout, "PUBLIC") {
		t.Fatalf("first migrate: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	owner, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	if _, err := owner.Exec(ctx, `GRANT UPDATE ON decisions TO PUBLIC`); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runMigrate(t, ownerEnv, "--app-role", role)
	if want := "revoked from PUBLIC, whose rights every role holds (" + role + " included), on schema public: UPDATE on decisions\n"; code != 0 || !strings.Contains(stdout, want) {
		t.Fatalf("second migrate: exit %d, want %q\nstdout: %s\nstderr: %s", code, want, stdout, stderr)
	}
	app, err := pgx.Connect(ctx, storetest.WithUser(ownerURL, role))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	if _, err := app.Exec(ctx, `UPDATE decisions SET verdict = verdict`); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("the app role updating decisions: %v, want permission denied", err)
	}
}

// The production path from the README: migrate as the owner with
// --app-role (twice: it is idempotent), then serve connected as that role
// takes an intent, the inbox approves it, the executor delivers it to the
// provider once, and the key is looked up, with no privilege refused on the
// way.
func TestServeRunsAsTheAppRole(t *testing.T) {
	t.Parallel()
	ownerURL := storetest.NewEmptyURL(t)
	role := storetest.NewRoleName(t, ownerURL)
	ownerEnv := map[string]string{"COUNTERSIGN_DATABASE_URL": ownerURL}
	code, stdout, stderr := runMigrate(t, ownerEnv, "--app-role", role)
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("applied %d migrations", postgresMigrations(t))) || !strings.Contains(stdout, "created role "+role) ||
		!strings.Contains(stdout, "granted role "+role+" what serve needs on schema public") {
		t.Fatalf("first migrate: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	code, stdout, stderr = runMigrate(t, ownerEnv, "--app-role", role)
	if code != 0 || !strings.Contains(stdout, "applied 0 migrations") || strings.Contains(stdout, "created role") ||
		!strings.Contains(stdout, "granted role "+role) {
		t.Fatalf("second migrate: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}

	provider := providertest.New()
	provider.Secret = []byte(smokeSecret)
	providerSrv := providertest.Start(t, provider)
	sum := sha256.Sum256([]byte(smokeToken))
	cfgPath := writeConfig(t, fmt.Sprintf(`
executor:
  dispatch_schedule: "@every 1s"
  reconcile_schedule: "@every 1s"
  expiry_schedule: "@every 1s"
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
  billing.credit:
    approvers: [%s]
    dispatch: {url: "%s/credits"}
    key_aware: true
    verify: {url: "%s/objects?key={key}"}
`, hex.EncodeToString(sum[:]), config.DefaultInboxReviewer, providerSrv.URL, providerSrv.URL))
	base, logs := startServeWith(t, envFrom(map[string]string{
		"COUNTERSIGN_DATABASE_URL":    storetest.WithUser(ownerURL, role),
		"COUNTERSIGN_CONFIG":          cfgPath,
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
	}))

	// serve holds its connections (the listener's at least) as the role.
	ctx := context.Background()
	owner, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	var conns int
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND usename = $1`, role).Scan(&conns); err != nil || conns == 0 {
		t.Fatalf("serve holds %d connections as %s (%v)", conns, role, err)
	}

	browser := newBrowserClient()
	call := caller(t, browser, base)
	agent := map[string]string{"Authorization": "Bearer " + smokeToken}
	created := postThenApprove(t, browser, base, logs, smokeToken,
		`{"run_id":"r-role","step":1,"tool":"billing.credit","effect":{"invoice":"inv_role_1","amount_cents":700,"currency":"EUR"},"summary":"Credit 7.00 EUR to inv_role_1"}`)

	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := call(http.MethodGet, "/v1/requests/"+created.Key+"?wait=5s", "", agent)
		var view struct {
			Status    string
			Decision  *struct{ Via, By string }
			Execution *struct {
				State    string
				Attempts int
			}
		}
		if code != http.StatusOK || json.Unmarshal(body, &view) != nil {
			t.Fatalf("GET = %d %s", code, body)
		}
		if view.Execution != nil && view.Execution.State == "succeeded" {
			if view.Status != "approved" || view.Decision == nil || view.Decision.Via != "inbox" || view.Execution.Attempts != 1 {
				t.Fatalf("view = %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never succeeded: %s\n%s", body, logs.String())
		}
	}
	if n := provider.Writes(created.Key); n != 1 {
		t.Fatalf("the provider received %d writes, want 1", n)
	}
	if code, page := call(http.MethodGet, "/inbox/lookup?q=inv_role_1", "", nil); code != http.StatusOK ||
		!strings.Contains(string(page), created.Key) || !strings.Contains(string(page), "succeeded") {
		t.Fatalf("lookup = %d:\n%s", code, page)
	}
	var events int
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM events WHERE request_id = $1`, created.ID).Scan(&events); err != nil || events < 4 {
		t.Fatalf("%d audit events (%v), want requested, decided, claimed, succeeded at least", events, err)
	}
	if strings.Contains(logs.String(), "permission denied") || strings.Contains(logs.String(), "SQLSTATE 42501") {
		t.Fatalf("serve was refused a privilege:\n%s", logs.String())
	}
}

// serve connected as the runtime role refuses to start on a schema with
// migrations pending, and says who must apply them.
func TestServeAsAppRoleNeedsMigratedSchema(t *testing.T) {
	t.Parallel()
	ownerURL := storetest.NewURL(t)
	roleURL := storetest.NewAppRoleURL(t, ownerURL)
	ctx := context.Background()
	owner, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	if _, err := owner.Exec(ctx, `DELETE FROM goose_db_version WHERE version_id = (SELECT max(version_id) FROM goose_db_version)`); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(smokeToken))
	cfgPath := writeConfig(t, fmt.Sprintf(`
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
  billing.credit:
    approvers: [U0ANA]
    dispatch: {url: "http://127.0.0.1:9/credits"}
`, hex.EncodeToString(sum[:])))
	var stderr bytes.Buffer
	code := run(ctx, []string{"serve"}, envFrom(map[string]string{
		"COUNTERSIGN_DATABASE_URL":    roleURL,
		"COUNTERSIGN_CONFIG":          cfgPath,
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
	}), nil, io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "may not apply") || !strings.Contains(stderr.String(), "countersign migrate --app-role") {
		t.Fatalf("serve exited %d:\n%s", code, stderr.String())
	}
}

// postgresMigrations counts the PostgreSQL migrations a fresh database gets.
func postgresMigrations(t *testing.T) int {
	t.Helper()
	files, err := fs.Glob(migrations.Postgres, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	return len(files)
}
