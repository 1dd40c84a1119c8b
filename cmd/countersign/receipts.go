package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/receipt"
)

// receiptKeys loads the key set that signs agent-executed tools' receipts:
// COUNTERSIGN_RECEIPT_KEY, else COUNTERSIGN_RECEIPT_KEY_FILE, else, for a
// run on the embedded store with an agent-executed tool, the key generated
// once into the data directory. A PostgreSQL deployment's replicas must
// share one key, so it is never generated there: an agent-executed tool
// without a key is refused at start.
func receiptKeys(cfg *config.Config) (*receipt.KeySet, error) {
	env := map[string]string{receipt.EnvKey: cfg.ReceiptKey, receipt.EnvKeyFile: cfg.ReceiptKeyFile}
	agentTools := agentExecutedTools(cfg)
	dir := ""
	if len(agentTools) > 0 && cfg.DatabaseURL == "" && cfg.DataDirErr() == nil {
		dir = cfg.DataDir
	}
	keys, err := receipt.LoadKeySet(func(name string) string { return env[name] }, dir)
	if err != nil {
		return nil, err
	}
	if keys == nil && len(agentTools) > 0 {
		return nil, fmt.Errorf("%s execute: agent, and no key signs their receipts: set %s to an Ed25519 private key (PEM), or %s to a file holding one",
			strings.Join(agentTools, ", "), receipt.EnvKey, receipt.EnvKeyFile)
	}
	return keys, nil
}

// agentExecutedTools names the tools the agent performs itself, sorted.
func agentExecutedTools(cfg *config.Config) []string {
	var names []string
	for name, t := range cfg.File.Tools {
		if t.Execute == approvals.ExecuteAgent {
			names = append(names, "tools."+name)
		}
	}
	sort.Strings(names)
	return names
}
