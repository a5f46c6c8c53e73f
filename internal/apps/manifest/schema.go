package manifest

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// SchemaID is the $id of the manifest's JSON Schema.
const SchemaID = "https://slipway.dev/schemas/app-manifest.json"

//go:embed schema.json
var schemaJSON []byte

// Schema returns the manifest's JSON Schema (draft 2020-12), as published.
// It checks the structure; Parse adds the rules a schema cannot express.
func Schema() []byte { return bytes.Clone(schemaJSON) }

// compiled is the schema, compiled on first use. It is ours and embedded,
// so failing to compile is a bug (a test compiles it).
var compiled = sync.OnceValue(func() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		panic("manifest: schema.json: " + err.Error())
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		panic("manifest: schema.json: " + err.Error())
	}
	return c.MustCompile(SchemaID)
})

// patternMessages words the schema's patterns for people. A test checks
// that every pattern in schema.json has one.
var patternMessages = map[string]string{
	`^[a-z][a-z0-9_]{0,62}$`:             "must be a lowercase letter followed by at most 62 lowercase letters, digits or _",
	`^[A-Z_][A-Z0-9_]*$`:                 "must be upper-case letters, digits and _, not starting with a digit",
	`^((/[A-Za-z0-9._~-]+)+(/\*)?|/\*)$`: "must start with / and have segments of letters, digits and . _ ~ -, optionally ending in /*",
	`^[a-z0-9][A-Za-z0-9._/:@-]*$`:       "must be a container image reference, such as node:22-alpine",
	`^[a-z][a-z0-9-]{0,62}$`:             "must be a script's slug: lowercase letters, digits and hyphens, starting with a letter",
}

// problem is one schema violation and where it is.
type problem struct {
	at  position
	msg string
}

// validate checks v against the schema; each problem is "path: message",
// in document order.
func validate(v map[string]any, t *tree) []string {
	err := compiled().Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{"manifest: " + err.Error()}
	}
	var found []problem
	add := func(path, msg string) {
		at, ok := t.at[path]
		for p := path; !ok && p != ""; {
			p = parentPath(p)
			at, ok = t.at[p]
		}
		found = append(found, problem{at, orRoot(path) + ": " + msg})
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		path := instancePath(v, e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				add(joinKey(path, p), "unknown field")
			}
			return
		case *kind.Required:
			for _, p := range k.Missing {
				add(joinKey(path, p), "is required")
			}
			return
		case *kind.PropertyNames:
			path = propertyNamesPath(e.SchemaURL, path)
			for _, c := range leaves(e) {
				add(path, fmt.Sprintf("key %s %s", clip(strconv.Quote(k.Property)), describe(c.ErrorKind)))
			}
			return
		}
		if len(e.Causes) == 0 {
			add(path, describe(e.ErrorKind))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.SortStableFunc(found, func(a, b problem) int {
		if a.at.line != b.at.line {
			return a.at.line - b.at.line
		}
		if a.at.column != b.at.column {
			return a.at.column - b.at.column
		}
		return strings.Compare(a.msg, b.msg)
	})
	out := make([]string, 0, len(found))
	seen := make(map[string]bool, len(found))
	for _, p := range found {
		if !seen[p.msg] {
			seen[p.msg] = true
			out = append(out, p.msg)
		}
	}
	return out
}

// propertyNamesPath finds the mapping a propertyNames error is about.
// jsonschema v6.0.3 keeps such an error's instance location without
// copying it, so validating later fields overwrites it
// (santhosh-tekuri/jsonschema#258 and #269). The schema's location is sound, and
// schema.json has propertyNames only in a top-level field
// (#/properties/env/propertyNames), which names the mapping; else the
// instance location is all there is.
func propertyNamesPath(schemaURL, fallback string) string {
	_, frag, _ := strings.Cut(schemaURL, "#")
	name, ok := strings.CutPrefix(frag, "/properties/")
	if !ok {
		return fallback
	}
	name, ok = strings.CutSuffix(name, "/propertyNames")
	if !ok || strings.ContainsAny(name, "/~") {
		return fallback
	}
	return joinKey("", name)
}

// parentPath is the path of the list or mapping holding path's value.
func parentPath(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i >= 0 {
			return path[:i]
		}
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

// leaves are the innermost errors under e.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// instancePath writes a JSON pointer's tokens as a path (functions[2].name),
// reading v to tell a list index from a key.
func instancePath(v any, tokens []string) string {
	path := ""
	for _, tok := range tokens {
		switch cur := v.(type) {
		case []any:
			i, _ := strconv.Atoi(tok)
			path = fmt.Sprintf("%s[%d]", path, i)
			if i >= 0 && i < len(cur) {
				v = cur[i]
			} else {
				v = nil
			}
		case map[string]any:
			path = joinKey(path, tok)
			v = cur[tok]
		default:
			path = joinKey(path, tok)
			v = nil
		}
	}
	return path
}

// describe words one schema violation.
func describe(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = typeNames[w]
		}
		if k.Got == "null" {
			return fmt.Sprintf("must be %s (it has no value)", strings.Join(want, " or "))
		}
		msg := fmt.Sprintf("must be %s, not %s", strings.Join(want, " or "), typeNames[k.Got])
		if slices.Contains(k.Want, "string") && (k.Got == "integer" || k.Got == "number" || k.Got == "boolean") {
			msg += " (put the value in quotes)"
		}
		return msg
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		return "must be one of " + strings.Join(want, ", ")
	case *kind.MinLength:
		if k.Want == 1 {
			return "must not be empty"
		}
		return fmt.Sprintf("must be at least %d characters", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters (it has %d)", k.Want, k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items (it has %d)", k.Want, k.Got)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d entries (it has %d)", k.Want, k.Got)
	case *kind.Minimum:
		return "must be at least " + k.Want.RatString()
	case *kind.Maximum:
		return "must be at most " + k.Want.RatString()
	case *kind.Pattern:
		if msg, ok := patternMessages[k.Want]; ok {
			return msg
		}
		return "must match " + k.Want
	}
	return "is not valid"
}

// typeNames are JSON Schema's types in YAML's words.
var typeNames = map[string]string{
	"boolean": "true or false",
	"integer": "an integer",
	"number":  "a number",
	"string":  "a string",
	"array":   "a list",
	"object":  "a mapping",
}
