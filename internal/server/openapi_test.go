package server

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenAPIGolden keeps docs/api in step with the registered operations.
// Regenerate with: go run ./cmd/slipway openapi --out docs/api
func TestOpenAPIGolden(t *testing.T) {
	specs, err := Specs()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range SpecFiles {
		path := filepath.Join("..", "..", "docs", "api", name)
		committed, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (generate it with: go run ./cmd/slipway openapi --out docs/api)", path, err)
		}
		if !bytes.Equal(committed, specs[name]) {
			t.Errorf("%s is out of date with the code; regenerate it with: go run ./cmd/slipway openapi --out docs/api", path)
		}
	}
}

func TestSpecsAreDeterministic(t *testing.T) {
	a, _ := Specs()
	b, _ := Specs()
	for _, name := range SpecFiles {
		if !bytes.Equal(a[name], b[name]) {
			t.Fatalf("%s differs between two renders", name)
		}
	}
}
