package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/countersign/countersign/approvals"
)

// EffectSchemaConfig is a tool's effect_schema: a JSON Schema (2020-12)
// written inline, as YAML or JSON, or the path of a JSON file.
type EffectSchemaConfig struct {
	// Path is the file's path, when the value is a string.
	Path string
	// Inline is the schema, when the value is a mapping.
	Inline map[string]any
}

// UnmarshalYAML takes a string as a path and a mapping as the schema itself.
func (e *EffectSchemaConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		e.Path = n.Value
		return nil
	}
	return n.Decode(&e.Inline)
}

// checkEffectSchemaYAML is checkYAML for an effect_schema value: a file path
// or a mapping, whose keywords are JSON Schema's, checked when it compiles.
func checkEffectSchemaYAML(n *yaml.Node, path string) []error {
	if n.Kind == yaml.ScalarNode || n.Kind == yaml.MappingNode {
		return nil
	}
	return []error{&YAMLError{Line: n.Line, Column: n.Column, Path: path,
		Problem: "must be a JSON Schema (a mapping) or the path of a JSON file"}}
}

// compileEffectSchemas compiles every tool's effect schema, so that a bad
// one stops serve before it binds its port, and keeps them for ReviewTools.
func (c *Config) compileEffectSchemas() error {
	var errs []error
	c.effectSchemas = map[string]*approvals.EffectSchema{}
	dir := filepath.Dir(c.ConfigPath)
	for name, t := range c.File.Tools {
		if t.EffectSchema == nil {
			continue
		}
		raw, base, err := t.EffectSchema.document(dir)
		if err == nil {
			c.effectSchemas[name], err = approvals.CompileEffectSchema(name, raw, base)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("tools.%s.effect_schema: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// document returns the schema as JSON, and the directory its relative $refs
// start from.
func (e *EffectSchemaConfig) document(configDir string) (raw []byte, base string, err error) {
	if e.Inline != nil {
		raw, err = json.Marshal(e.Inline)
		return raw, configDir, err
	}
	if e.Path == "" {
		return nil, "", errors.New("is empty: write the schema inline, or the path of a JSON file")
	}
	path := e.Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(configDir, path)
	}
	raw, err = os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("reading the schema: %w", err)
	}
	return raw, filepath.Dir(path), nil
}

// MarshalYAML writes the schema back as it was given: its path, or itself.
func (e EffectSchemaConfig) MarshalYAML() (any, error) {
	if e.Path != "" {
		return e.Path, nil
	}
	return e.Inline, nil
}
