package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/countersign/countersign/config"
)

func TestServeNamesTheSettingWhenThePortIsTaken(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"serve"}, envFrom(map[string]string{
		"COUNTERSIGN_LISTEN": taken.Addr().String(), "COUNTERSIGN_DATA_DIR": t.TempDir(),
	}), nil, &stderr, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "already in use") || !strings.Contains(stderr.String(), "COUNTERSIGN_LISTEN") {
		t.Fatalf("serve exited %d:\n%s", code, stderr.String())
	}
}

func TestLogFormat(t *testing.T) {
	t.Parallel()
	for format, want := range map[string]string{"": `{"time":`, "json": `{"time":`, "text": `time=`} {
		var out bytes.Buffer
		newLogger(format, &out).Info("hello")
		if !strings.HasPrefix(out.String(), want) {
			t.Errorf("format %q logged %q, want it to start %q", format, out.String(), want)
		}
	}
	cfg, err := config.Load(envFrom(map[string]string{"COUNTERSIGN_LOG_FORMAT": "yaml", "COUNTERSIGN_DATA_DIR": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "COUNTERSIGN_LOG_FORMAT") {
		t.Errorf("Validate = %v, want a complaint about COUNTERSIGN_LOG_FORMAT", err)
	}
}

func TestDatabaseURLProblemsNameTheSetting(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"localhost:5432/countersign", "mysql://root@127.0.0.1/db"} {
		cfg, err := config.Load(envFrom(map[string]string{"COUNTERSIGN_DATABASE_URL": url, "COUNTERSIGN_DATA_DIR": t.TempDir()}))
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "COUNTERSIGN_DATABASE_URL is not a PostgreSQL URL: write it as postgres://") {
			t.Errorf("%s: Validate = %v", url, err)
		}
	}
	// A URL of the right form that cannot be parsed is named too.
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"migrate"}, envFrom(map[string]string{
		"COUNTERSIGN_DATABASE_URL": "postgres://u@127.0.0.1:notaport/db", "COUNTERSIGN_DATA_DIR": t.TempDir(),
	}), nil, &stderr, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "COUNTERSIGN_DATABASE_URL (postgres://") {
		t.Errorf("migrate exited %d:\n%s", code, stderr.String())
	}
}
