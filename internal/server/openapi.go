package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slipway/internal/platform/httpx"
)

// SpecFiles maps each exported OpenAPI file to the API it documents.
var SpecFiles = []string{"public.json", "management.json"}

// Specs renders both OpenAPI documents without a database or a listener.
func Specs() (map[string][]byte, error) {
	apis := NewAPIs(httpx.NewMux(), Services{})
	out := map[string][]byte{}
	for name, api := range map[string]any{"public.json": apis.Public.OpenAPI(), "management.json": apis.Management.OpenAPI()} {
		b, err := json.MarshalIndent(api, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("openapi: %s: %w", name, err)
		}
		out[name] = append(b, '\n')
	}
	return out, nil
}

// WriteSpecs writes both documents into dir.
func WriteSpecs(dir string) error {
	specs, err := Specs()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range SpecFiles {
		if err := os.WriteFile(filepath.Join(dir, name), specs[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}
