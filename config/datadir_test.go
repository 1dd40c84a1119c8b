package config

import (
	"errors"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// An empty environment (env -i, a bare unit or container) still finds a
// data directory: the user's home from the password database.
func TestDataDirWithoutHOMEIsTheUsersHome(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" || u.HomeDir == "/" {
		t.Fatalf("this test needs a user with a home directory: %v %+v", err, u)
	}
	got, err := DataDir(envFrom(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(u.HomeDir, ".local", "share", "countersign"); got != want {
		t.Errorf("dataDir = %q, want %q", got, want)
	}
}

// A local run that cannot find a data directory says so, and only so: the
// missing demo agent and tool follow from it and would bury the cause.
func TestALocalRunWithoutADataDirNamesOnlyThatCause(t *testing.T) {
	cfg, err := Load(envFrom(nil))
	if err != nil {
		t.Fatal(err)
	}
	cfg.dataDirErr = errors.New("nowhere to keep the embedded store")
	err = cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "nowhere to keep the embedded store") {
		t.Fatalf("Validate = %v, want the data directory's error", err)
	}
	if strings.Contains(err.Error(), "no agent") || strings.Contains(err.Error(), "no tool") {
		t.Errorf("Validate = %v: derived errors follow the cause", err)
	}
}
