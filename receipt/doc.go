// Package receipt signs and verifies approval receipts: a compact JWS
// (RFC 7515) signed with Ed25519 (alg EdDSA, RFC 8037) that countersign
// gives an agent once a write of an agent-executed tool is approved. The
// agent sends it to its provider in Countersign-Receipt; the provider checks
// it with a Verifier against countersign's public keys
// (GET /.well-known/jwks.json), so it can refuse any write nobody approved
// without sharing a secret with countersign.
//
// A provider imports this package alone: it depends on the standard library
// and countersign's RFC 8785 canonicalization, nothing of the service.
package receipt
