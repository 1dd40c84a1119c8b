package main

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/config"
)

// A reload hands the console's group resolver the reloaded console.groups,
// and says that a changed client waits for a restart.
func TestReloadTakesTheConsoleGroups(t *testing.T) {
	started := &config.Config{}
	started.File.Console = config.ConsoleConfig{Issuer: "https://idp.example.com", ClientID: "countersign",
		Groups: map[string][]string{"finance": {"oidc:ana@example.com"}}}
	a := &app{cfg: started, consoleGroups: consoleGroups(started, nil)}
	members := func() []string {
		m, err := a.consoleGroups.GroupMembers(context.Background(), "oidc:group:finance")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := members(); !slices.Equal(m, []string{"oidc:ana@example.com"}) {
		t.Fatalf("finance is %v at start", m)
	}

	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	loaded := &config.Config{}
	loaded.File.Console = started.File.Console
	loaded.File.Console.Groups = map[string][]string{"finance": {"oidc:bo@example.com"}}
	a.reloadConsole(loaded, log)
	if m := members(); !slices.Equal(m, []string{"oidc:bo@example.com"}) {
		t.Fatalf("finance is %v after the reload, want bo alone", m)
	}
	if strings.Contains(logs.String(), "next restart") {
		t.Fatalf("a reload that changes only the groups warns: %s", logs.String())
	}

	moved := &config.Config{}
	moved.File.Console = loaded.File.Console
	moved.File.Console.ClientID = "another-client"
	a.reloadConsole(moved, log)
	if !strings.Contains(logs.String(), "next restart") {
		t.Fatalf("a reload that changes the client does not say it waits for a restart: %s", logs.String())
	}
}
