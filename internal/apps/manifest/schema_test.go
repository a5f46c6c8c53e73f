package manifest

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

func TestSchemaPublished(t *testing.T) {
	b := Schema()
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("Schema() is not JSON: %v", err)
	}
	if doc["$id"] != "https://slipway.dev/schemas/app-manifest.json" {
		t.Fatalf("$id = %v", doc["$id"])
	}
	if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("$schema = %v", doc["$schema"])
	}
	b[0] = 'x'
	if Schema()[0] != '{' {
		t.Fatal("Schema() hands out the embedded bytes")
	}
	if compiled() == nil {
		t.Fatal("schema did not compile")
	}
}

// walkSchema calls fn with each object in the schema and its JSON pointer.
func walkSchema(v any, ptr string, fn func(ptr string, obj map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		fn(ptr, v)
		for k, c := range v {
			walkSchema(c, ptr+"/"+k, fn)
		}
	case []any:
		for _, c := range v {
			walkSchema(c, ptr+"/[]", fn)
		}
	}
}

func TestSchemaPatternsHaveMessages(t *testing.T) {
	var doc any
	if err := json.Unmarshal(schemaJSON, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	walkSchema(doc, "", func(ptr string, obj map[string]any) {
		if p, ok := obj["pattern"].(string); ok {
			n++
			if _, ok := patternMessages[p]; !ok {
				t.Errorf("%s: pattern %s has no message in patternMessages", ptr, p)
			}
			if _, err := regexp.Compile(p); err != nil {
				t.Errorf("%s: %v", ptr, err)
			}
		}
		// propertyNamesPath relies on propertyNames sitting only in a
		// top-level field.
		if _, ok := obj["propertyNames"]; ok && (!strings.HasPrefix(ptr, "/properties/") || strings.Count(ptr, "/") != 2) {
			t.Errorf("%s: propertyNames below a top-level field", ptr)
		}
	})
	if n != len(patternMessages) {
		t.Errorf("%d patterns in the schema, %d messages", n, len(patternMessages))
	}
}

func TestPropertyNamesPath(t *testing.T) {
	tests := []struct{ url, want string }{
		{SchemaID + "#/properties/env/propertyNames", "env"},
		{SchemaID + "#/properties/env", "fallback"},
		{SchemaID + "#/$defs/x/propertyNames", "fallback"},
		{SchemaID + "#/properties/a/properties/b/propertyNames", "fallback"},
	}
	for _, tc := range tests {
		if got := propertyNamesPath(tc.url, "fallback"); got != tc.want {
			t.Errorf("propertyNamesPath(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}
