package config

import "github.com/countersign/countersign/executor"

// ExecutorTools turns the operator's tool configuration into the executor's.
// Dispatch targets come only from here, never from an agent's request.
func (c *Config) ExecutorTools() map[string]executor.Tool {
	tools := make(map[string]executor.Tool, len(c.File.Tools))
	for name, t := range c.File.Tools {
		et := executor.Tool{
			Name: name, Method: t.Dispatch.Method, URL: t.Dispatch.URL, Headers: t.Dispatch.Headers,
			Timeout: t.Dispatch.Timeout, KeyAware: t.KeyAware, VerifyAfter: t.VerifyAfter, MaxAttempts: t.MaxAttempts,
			ClaimTimeout: t.ClaimTimeout, ApprovalTTL: t.ApprovalTTL, RequestTTL: t.RequestTTL,
		}
		if len(t.Dispatch.Secret) > 0 {
			et.Secrets = t.Dispatch.Secret.bytes()
		}
		if t.Verify != nil {
			et.Verify = &executor.Endpoint{URL: t.Verify.URL, Headers: t.Verify.Headers}
		}
		if t.Precondition != nil {
			et.Precondition = &executor.Endpoint{URL: t.Precondition.URL, Headers: t.Precondition.Headers}
		}
		tools[name] = et
	}
	return tools
}
