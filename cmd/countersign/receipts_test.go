package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/receipt"
)

// A run on the embedded store generates its receipt key once into the data
// directory; a PostgreSQL deployment, whose replicas must share one key,
// refuses an agent-executed tool without one; a run without such a tool
// neither generates nor needs one.
func TestReceiptKeys(t *testing.T) {
	t.Parallel()
	agentTool := map[string]config.ToolConfig{"billing.payout": {Execute: approvals.ExecuteAgent}}
	dir := t.TempDir()
	local := &config.Config{DataDir: dir, File: config.FileConfig{Tools: agentTool}}
	first, err := receiptKeys(local)
	if err != nil || first == nil {
		t.Fatalf("local run: %v, %v", first, err)
	}
	if info, err := os.Stat(filepath.Join(dir, receipt.KeyFileName)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the generated key file: %v, %v", info, err)
	}
	second, err := receiptKeys(local)
	if err != nil || second.KID() != first.KID() {
		t.Errorf("the local key changed across starts: %s, %v", second.KID(), err)
	}

	deployed := &config.Config{DatabaseURL: "postgres://db/countersign", DataDir: t.TempDir(), File: config.FileConfig{Tools: agentTool}}
	if _, err := receiptKeys(deployed); err == nil || !strings.Contains(err.Error(), "tools.billing.payout") ||
		!strings.Contains(err.Error(), receipt.EnvKey) {
		t.Errorf("PostgreSQL without a key = %v", err)
	}
	if keys, err := receiptKeys(&config.Config{DataDir: t.TempDir()}); keys != nil || err != nil {
		t.Errorf("no agent-executed tool: %v, %v", keys, err)
	}
}
