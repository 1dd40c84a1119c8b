// Package crosslang holds the SDKs to one another: a gated function of the
// Python SDK and one of the TypeScript SDK each run an agent-executed write
// against a real countersign serve, and the other language's receipt
// verifier checks the receipt it was given. Its only code is its test, and
// the child processes under testdata/.
package crosslang
