package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"sort"
	"strings"
)

// What the shipped examples hold must not work beyond the machine they were
// tried on: when serve's listener is reachable from elsewhere, the
// development token and a short secret are refused. A run on a loopback
// address (the local run, make run) keeps them, so trying countersign
// needs no secret of one's own.

// minSecretBytes is the least length of a dispatch or callback secret
// when serve listens beyond loopback: 32 bytes, what `openssl rand -hex 16`
// gives; the docs suggest `openssl rand -hex 32`.
const minSecretBytes = 32

// devTokens are the agent tokens the examples and docs print (README's
// curls, examples/countersign.yml). Anyone who has read them holds them.
var devTokens = []string{"dev-agent-token"}

// PlaceholderHash is the text deploy/kubernetes/configmap.yaml ships where
// an agent's token hash goes; it fails validation until it is replaced.
const PlaceholderHash = "REPLACE-with-the-sha256-of-a-token"

// makeTokenHowTo says how to make a token and its hash, in the words of
// docs/OPERATIONS.md ("Generating a secret").
const makeTokenHowTo = "make one with TOKEN=$(openssl rand -hex 32), give it to the agent, and put its hash here: printf '%s' \"$TOKEN\" | sha256sum"

// loopbackOnly reports whether addr (host:port, as COUNTERSIGN_LISTEN
// takes it) accepts connections from this machine alone: localhost or a
// loopback IP. An empty host (":8080") is every interface.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validateExposure reports the agents that hold a development token's hash
// or the placeholder's, and every dispatch or callback secret shorter than
// minSecretBytes, when serve listens beyond loopback. No message holds a
// secret.
func (c *Config) validateExposure() []error {
	var errs []error
	for i, a := range c.File.Agents {
		for _, h := range a.TokenSHA256 {
			if strings.TrimSpace(h) == PlaceholderHash {
				errs = append(errs, fmt.Errorf("agents[%d].token_sha256 is the example's placeholder: %s", i, makeTokenHowTo))
			}
		}
	}
	if loopbackOnly(c.Listen) {
		return errs
	}
	beyond := fmt.Sprintf("serve listens on %s, beyond this machine", c.Listen)
	known := map[string]string{}
	for _, token := range devTokens {
		sum := sha256.Sum256([]byte(token))
		known[hex.EncodeToString(sum[:])] = token
	}
	for i, a := range c.File.Agents {
		for _, h := range a.TokenSHA256 {
			if token, ok := known[strings.ToLower(strings.TrimSpace(h))]; ok {
				errs = append(errs, fmt.Errorf("agents[%d].token_sha256 is the hash of %q, the development token printed in the examples, and %s: %s",
					i, token, beyond, makeTokenHowTo))
			}
		}
	}
	short := func(what string, values []string) {
		for i, v := range values {
			if v != "" && len(v) < minSecretBytes {
				if len(values) > 1 {
					what = fmt.Sprintf("%s (value %d of %d)", what, i+1, len(values))
				}
				errs = append(errs, fmt.Errorf("%s is shorter than %d bytes, and %s: make one with openssl rand -hex 32", what, minSecretBytes, beyond))
				return
			}
		}
	}
	short("COUNTERSIGN_DISPATCH_SECRET", splitSecrets(c.DispatchSecret))
	names := make([]string, 0, len(c.File.Tools))
	for name := range c.File.Tools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		short("tools."+name+".dispatch.secret", c.File.Tools[name].Dispatch.Secret)
	}
	for i, a := range c.File.Agents {
		if a.Callback != nil {
			short(fmt.Sprintf("agents[%d].callback.secret", i), a.Callback.Secret)
		}
	}
	return errs
}
