package config

import "github.com/countersign/countersign/mcpserver"

// checkTypedToolNames refuses tools whose typed MCP tools would not be
// their own (two names that become one, a name too long for a model API).
func (c *Config) checkTypedToolNames() error {
	var names []string
	for name, t := range c.File.Tools {
		if t.EffectSchema != nil {
			names = append(names, name)
		}
	}
	return mcpserver.CheckTypedToolNames(names)
}
