package manifest

import (
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"slipway/internal/platform/text"
)

// position is where a value starts in the YAML text.
type position struct{ line, column int }

// tree turns YAML text into JSON-like values (map[string]any, []any,
// string, int64, float64, bool, nil), refusing what YAML allows but a
// manifest must not have: anchors, aliases, merge keys, custom tags,
// duplicate keys, more than one document, a document that is not a
// mapping and control characters. It remembers where each path starts, to
// report problems in document order.
type tree struct {
	problems []string
	at       map[string]position
}

// parseTree reads the one YAML document of src.
func parseTree(src string) (map[string]any, *tree) {
	t := &tree{at: map[string]position{}}
	dec := yaml.NewDecoder(strings.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			t.problem("", "is empty")
		} else {
			t.problem("", yamlError(err))
		}
		return nil, t
	}
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case err == nil:
		t.problem("", "must be one YAML document (found ---)")
		return nil, t
	case !errors.Is(err, io.EOF):
		t.problem("", yamlError(err))
		return nil, t
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		t.problem("", "must be a YAML mapping of fields (name: …)")
		return nil, t
	}
	v := t.value(root, "", "")
	if len(t.problems) > 0 {
		return nil, t
	}
	return v.(map[string]any), t
}

// yamlError words a YAML syntax error.
func yamlError(err error) string {
	return "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")
}

// problem records what is wrong at path ("" is the whole manifest).
func (t *tree) problem(path, msg string) {
	t.problems = append(t.problems, orRoot(path)+": "+msg)
}

// value converts node, found at path under the field named key.
func (t *tree) value(n *yaml.Node, path, key string) any {
	if _, ok := t.at[path]; !ok {
		t.at[path] = position{n.Line, n.Column}
	}
	if n.Kind == yaml.AliasNode {
		t.problem(path, fmt.Sprintf("YAML aliases (*%s) are not allowed (line %d)", n.Value, n.Line))
		return nil
	}
	if n.Anchor != "" {
		t.problem(path, fmt.Sprintf("YAML anchors (&%s) are not allowed (line %d)", n.Anchor, n.Line))
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		if n.ShortTag() != "!!map" {
			t.problem(path, fmt.Sprintf("YAML tag %s is not allowed (line %d)", n.Tag, n.Line))
			return nil
		}
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			name, ok := t.key(k, path)
			if !ok {
				continue
			}
			sub := joinKey(path, name)
			if _, dup := m[name]; dup {
				t.problem(sub, fmt.Sprintf("duplicate key (line %d)", k.Line))
				continue
			}
			t.at[sub] = position{k.Line, k.Column}
			m[name] = t.value(v, sub, name)
		}
		return m
	case yaml.SequenceNode:
		if n.ShortTag() != "!!seq" {
			t.problem(path, fmt.Sprintf("YAML tag %s is not allowed (line %d)", n.Tag, n.Line))
			return nil
		}
		s := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			s = append(s, t.value(item, fmt.Sprintf("%s[%d]", path, i), key))
		}
		return s
	case yaml.ScalarNode:
		return t.scalar(n, path, key)
	}
	t.problem(path, fmt.Sprintf("unexpected YAML node (line %d)", n.Line))
	return nil
}

// key reads a mapping key: a plain scalar, not a merge key (<<).
func (t *tree) key(k *yaml.Node, path string) (string, bool) {
	switch {
	case k.Kind == yaml.AliasNode:
		t.problem(path, fmt.Sprintf("YAML aliases (*%s) are not allowed (line %d)", k.Value, k.Line))
		return "", false
	case k.Anchor != "":
		t.problem(path, fmt.Sprintf("YAML anchors (&%s) are not allowed (line %d)", k.Anchor, k.Line))
		return "", false
	case k.Kind != yaml.ScalarNode:
		t.problem(path, fmt.Sprintf("a key must be plain text (line %d)", k.Line))
		return "", false
	case k.ShortTag() == "!!merge":
		t.problem(path, fmt.Sprintf("YAML merge keys (<<) are not allowed (line %d)", k.Line))
		return "", false
	}
	if r, bad := forbiddenRune(k.Value, false); bad {
		t.problem(joinKey(path, k.Value), fmt.Sprintf("the key must not contain control or bidirectional-override characters (found U+%04X)", r))
		return "", false
	}
	return k.Value, true
}

// scalar converts a scalar by its resolved tag. A timestamp stays text.
func (t *tree) scalar(n *yaml.Node, path, key string) any {
	switch n.ShortTag() {
	case "!!str", "!!timestamp", "!!merge":
		if r, bad := forbiddenRune(n.Value, multiline[key]); bad {
			t.problem(path, fmt.Sprintf("must not contain control or bidirectional-override characters (found U+%04X)", r))
			return nil
		}
		return n.Value
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			t.problem(path, fmt.Sprintf("%q is not a boolean (line %d)", n.Value, n.Line))
			return nil
		}
		return b
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			t.problem(path, fmt.Sprintf("%s is out of range (line %d)", clip(n.Value), n.Line))
			return nil
		}
		return i
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			t.problem(path, fmt.Sprintf("%s is not a finite number (line %d)", clip(n.Value), n.Line))
			return nil
		}
		return f
	}
	t.problem(path, fmt.Sprintf("YAML tag %s is not allowed (line %d)", clip(n.Tag), n.Line))
	return nil
}

// multiline names the fields whose text may hold tabs and line breaks.
var multiline = map[string]bool{"sql": true, "command": true, "description": true}

// forbiddenRune finds a character no manifest text may hold: the ones the
// platform refuses in names (controls, bidirectional overrides, line
// separators), tab and line feed aside in multi-line fields.
func forbiddenRune(s string, multiline bool) (rune, bool) {
	if text.StripControls(s) == s {
		return 0, false
	}
	for _, r := range s {
		if multiline && (r == '\t' || r == '\n') {
			continue
		}
		if text.StripControls(string(r)) == "" {
			return r, true
		}
	}
	return 0, false
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// joinKey is the path of a mapping's key: a.b, or a["odd key"].
func joinKey(path, key string) string {
	if !plainKey.MatchString(key) {
		return fmt.Sprintf("%s[%s]", path, clip(strconv.Quote(key)))
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// orRoot names the root for problems about the whole document.
func orRoot(path string) string {
	if path == "" {
		return "manifest"
	}
	return path
}

// clip shortens user text quoted in a message.
func clip(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
