package approvals

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/countersign/countersign/receipt"
	"github.com/countersign/countersign/store"
)

// ExecuteAgent is a tool's execute when the agent performs its approved
// writes itself: countersign never sends them, and an approved request
// carries a receipt the agent shows its provider.
const ExecuteAgent = store.ExecuteAgent

// DefaultOutcomeTimeout is how long an approved agent-executed write waits
// for its outcome before it needs review, when the tool does not say.
const DefaultOutcomeTimeout = time.Hour

// AgentExecuted reports whether the agent, not countersign, performs the
// tool's approved writes.
func (t Tool) AgentExecuted() bool { return t.Execute == ExecuteAgent }

// outcomeTimeout is how long the tool's approved writes wait for an
// outcome, and how long their receipts are taken.
func (t Tool) outcomeTimeout() time.Duration {
	if t.OutcomeTimeout > 0 {
		return t.OutcomeTimeout
	}
	return DefaultOutcomeTimeout
}

// outcomeTimeoutOf is the outcome timeout of the tool as configured now, or
// the default for a tool no longer configured.
func (s *Service) outcomeTimeoutOf(name string) time.Duration {
	if tool, ok := s.Tool(name); ok {
		return tool.outcomeTimeout()
	}
	return DefaultOutcomeTimeout
}

// Receipt returns the signed receipt of req's approval d, or "" when there
// is none to give: the request was not frozen as agent-executed, it is not
// approved, or no key signs receipts. Signing is cheap and
// deterministic, so the receipt is signed each time the request is
// represented rather than stored.
func (s *Service) Receipt(req store.Request, d *store.Decision) string {
	if s.Receipts == nil || !req.Policy.AgentExecuted() || req.Status != store.RequestApproved ||
		d == nil || d.Verdict != store.VerdictApprove {
		return ""
	}
	sum := sha256.Sum256(req.Snapshot)
	token, err := s.Receipts.Sign(receipt.Claims{
		Key: req.Key, Tool: req.Tool, Agent: req.RequestedBy, EffectSHA256: hex.EncodeToString(sum[:]),
		DecidedBy: d.DecidedBy, Via: receipt.ViaOf(d.Via), PolicyVersion: req.Policy.Version,
		IssuedAt: d.DecidedAt.Unix(), Expiry: d.DecidedAt.Add(s.outcomeTimeoutOf(req.Tool)).Unix(),
	})
	if err != nil {
		s.Logger.Error("signing a receipt", "request_id", req.ID, "error", err)
		return ""
	}
	return token
}

// JWKS is the public keys receipts are verified with, the document GET
// /.well-known/jwks.json serves: no keys when none signs.
func (s *Service) JWKS() []byte {
	if s == nil {
		return (*receipt.KeySet)(nil).MarshalJWKS()
	}
	return s.Receipts.MarshalJWKS()
}
