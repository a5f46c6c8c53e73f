package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMEConfigTables keeps the README's configuration tables equal to
// the Var tables. Rewrite them with: UPDATE_README=1 go test ./internal/config
func TestREADMEConfigTables(t *testing.T) {
	path := filepath.Join("..", "..", "README.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, section := range []struct {
		marker string
		vars   []Var
	}{{"server", ServerVars}, {"runner", RunnerVars}} {
		begin, end := "<!-- config:"+section.marker+" -->\n", "<!-- /config:"+section.marker+" -->"
		i, j := strings.Index(readme, begin), strings.Index(readme, end)
		if i < 0 || j < i {
			t.Fatalf("README lacks the %s…%s markers", strings.TrimSpace(begin), end)
		}
		want := MarkdownTable(section.vars)
		got := readme[i+len(begin) : j]
		if got == want {
			continue
		}
		if os.Getenv("UPDATE_README") != "" {
			readme = readme[:i+len(begin)] + want + readme[j:]
			continue
		}
		t.Errorf("README's %s configuration table is out of date; run UPDATE_README=1 go test ./internal/config", section.marker)
	}
	if os.Getenv("UPDATE_README") != "" {
		if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
