package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The YAML form of a workflow is its portable document: what a person
// writes by hand or keeps in a repository, without ids, project or
// timestamps.
//
//	version: 1
//	name: Nightly triage
//	max_concurrent_runs: 2          # omitted when null
//	nodes:
//	  - key: fetch
//	    kind: http_request
//	    ordinal: 0                  # optional on import (default: the node's index)
//	    position: {x: 0, y: 120}    # optional on import (default: 0, 0)
//	    parent: each_item           # parent_node_key; omitted when null
//	    config:                     # omitted when empty
//	      url: https://example.com/{{ input.id }}
//	      method: GET
//	edges:
//	  - {source: fetch, handle: out, target: decide}   # handle optional on import
//
// Anchors, aliases, merge keys and tags other than YAML's core ones are
// refused, as are unknown fields, NUL characters and documents over 1 MiB.

// YAMLVersion is the version of the document format ExportYAML writes and
// ParseYAML reads.
const YAMLVersion = 1

const (
	// yamlMaxBytes caps a document ParseYAML reads.
	yamlMaxBytes = 1 << 20
	// yamlMaxConfigDepth caps the nesting of a node's config (the config
	// mapping itself is level 1), on import and export alike.
	yamlMaxConfigDepth = 64
	// yamlMaxDepth caps the nesting of the whole document: the config's
	// levels plus the document, nodes list and node around it.
	yamlMaxDepth = yamlMaxConfigDepth + 8
)

// YAMLError is a problem with a workflow's YAML document. Line is the
// 1-based line it was found on, or 0.
type YAMLError struct {
	Line int
	Msg  string
}

func (e *YAMLError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// errYAMLPanic marks a panic ParseYAML recovered from: a bug, never an
// answer the fuzz target accepts.
var errYAMLPanic = errors.New("internal error reading the YAML document")

func yamlErrorf(n *yaml.Node, format string, args ...any) error {
	e := &YAMLError{Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line = n.Line
	}
	return e
}

var yamlLibLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// yamlLibError turns an error of the YAML library into a YAMLError.
func yamlLibError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLibLine.FindStringSubmatch(msg); m != nil {
		if line, convErr := strconv.Atoi(m[1]); convErr == nil {
			return &YAMLError{Line: line, Msg: "invalid YAML: " + m[2]}
		}
	}
	return &YAMLError{Msg: "invalid YAML: " + msg}
}

// ---- export ----

// ExportYAML renders a workflow as its YAML document: the portable form, without ids, project or timestamps, so that
// export -> import -> export gives identical bytes.
func ExportYAML(w *Workflow) ([]byte, error) {
	if w == nil {
		return nil, errors.New("export YAML: no workflow")
	}
	if err := yamlCheckName(w.Name); err != nil {
		return nil, fmt.Errorf("export YAML: %w", err)
	}
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	yamlAdd(root, "version", yamlIntNode(YAMLVersion))
	yamlAdd(root, "name", yamlStringNode(w.Name))
	if w.MaxConcurrentRuns != nil {
		yamlAdd(root, "max_concurrent_runs", yamlIntNode(*w.MaxConcurrentRuns))
	}

	nodes := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for i := range w.Nodes {
		n := &w.Nodes[i]
		out, err := yamlExportNode(n)
		if err != nil {
			return nil, fmt.Errorf("export YAML: node %q: %w", n.Key, err)
		}
		nodes.Content = append(nodes.Content, out)
	}
	yamlAdd(root, "nodes", nodes)

	edges := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for i, e := range w.Edges {
		out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle}
		for _, f := range []struct{ name, value string }{{"source", e.Source}, {"handle", e.SourceHandle}, {"target", e.Target}} {
			if f.name == "handle" && f.value == "" {
				continue
			}
			if err := yamlCheckString(f.value); err != nil {
				return nil, fmt.Errorf("export YAML: edges[%d].%s: %w", i, f.name, err)
			}
			yamlAdd(out, f.name, yamlStringNode(f.value))
		}
		edges.Content = append(edges.Content, out)
	}
	yamlAdd(root, "edges", edges)

	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}); err != nil {
		return nil, fmt.Errorf("export YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("export YAML: %w", err)
	}
	return buf.Bytes(), nil
}

func yamlExportNode(n *Node) (*yaml.Node, error) {
	for _, s := range []string{n.Key, n.Kind} {
		if err := yamlCheckString(s); err != nil {
			return nil, err
		}
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	yamlAdd(out, "key", yamlStringNode(n.Key))
	yamlAdd(out, "kind", yamlStringNode(n.Kind))
	yamlAdd(out, "ordinal", yamlIntNode(n.Ordinal))
	pos := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle}
	for _, c := range []struct {
		name string
		v    float64
	}{{"x", n.Position.X}, {"y", n.Position.Y}} {
		num, err := yamlFloatNode(c.v)
		if err != nil {
			return nil, fmt.Errorf("position.%s: %w", c.name, err)
		}
		yamlAdd(pos, c.name, num)
	}
	yamlAdd(out, "position", pos)
	if n.ParentNodeKey != nil {
		if err := yamlCheckString(*n.ParentNodeKey); err != nil {
			return nil, fmt.Errorf("parent: %w", err)
		}
		yamlAdd(out, "parent", yamlStringNode(*n.ParentNodeKey))
	}
	if len(n.Config) > 0 {
		cfg, err := yamlValueNode(n.Config, 1)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		yamlAdd(out, "config", cfg)
	}
	return out, nil
}

// yamlAdd appends a field of the format (plain: y is the field y, not
// YAML 1.1's yes) to a mapping.
func yamlAdd(m *yaml.Node, field string, value *yaml.Node) {
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: field}, value)
}

func yamlIntNode(i int64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(i, 10)}
}

// yamlFloatNode writes a number the way a person would: integral values
// (as JSON decoding gives them, float64) up to 2^53 as integers, the
// others in the shortest form that reads back the same, with an exponent
// only for very small or very large magnitudes.
func yamlFloatNode(f float64) (*yaml.Node, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%v is not a JSON number", f)
	}
	if f == 0 {
		f = 0 // no negative zero
	}
	var s string
	abs := math.Abs(f)
	switch {
	case f == math.Trunc(f) && abs <= 1<<53:
		// Exact as an integer, and read back as the same number.
		s = strconv.FormatFloat(f, 'f', 0, 64)
	case abs < 1e-6 || abs >= 1e21 || f == math.Trunc(f):
		// Beyond 2^53 a float's shortest digits name other integers
		// (70000000008001104 prints as 70000000008001100): an exponent
		// keeps it a float.
		s = strconv.FormatFloat(f, 'e', -1, 64)
	default:
		s = strconv.FormatFloat(f, 'f', -1, 64)
	}
	tag := "!!float"
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		tag = "!!int"
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s}, nil
}

// yamlStringNode is a string scalar styled as yaml.v3's Marshal styles
// it: plain when it reads back as the same string (and is no YAML 1.1
// boolean or sexagesimal number), a literal block when it spans lines,
// double-quoted otherwise.
//
// One exception to yaml.v3's choice: a literal block whose first line
// starts with a tab reads back as an error (the tab is taken for
// indentation), so such strings are double-quoted.
func yamlStringNode(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	switch {
	case strings.Contains(s, "\n"):
		if strings.HasPrefix(s, "\t") || strings.Contains(s, "\n\t") {
			n.Style = yaml.DoubleQuotedStyle
		}
	case yamlOldBool(s) || yamlBase60Float.MatchString(s):
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

var yamlBase60Float = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)

func yamlOldBool(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return true
	}
	return false
}

// yamlValueNode renders a JSON-compatible config value.
func yamlValueNode(v any, depth int) (*yaml.Node, error) {
	switch v := v.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}, nil
	case string:
		if err := yamlCheckString(v); err != nil {
			return nil, err
		}
		return yamlStringNode(v), nil
	case float64:
		return yamlFloatNode(v)
	case float32:
		return yamlFloatNode(float64(v))
	case int:
		return yamlIntNode(int64(v)), nil
	case int8:
		return yamlIntNode(int64(v)), nil
	case int16:
		return yamlIntNode(int64(v)), nil
	case int32:
		return yamlIntNode(int64(v)), nil
	case int64:
		return yamlIntNode(v), nil
	case uint:
		return yamlUintNode(uint64(v))
	case uint8:
		return yamlIntNode(int64(v)), nil
	case uint16:
		return yamlIntNode(int64(v)), nil
	case uint32:
		return yamlIntNode(int64(v)), nil
	case uint64:
		return yamlUintNode(v)
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return yamlIntNode(i), nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", v.String())
		}
		return yamlFloatNode(f)
	case map[string]any:
		if depth > yamlMaxConfigDepth {
			return nil, fmt.Errorf("nested deeper than %d levels", yamlMaxConfigDepth)
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			if err := yamlCheckString(k); err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, k := range keys {
			val, err := yamlValueNode(v[k], depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out.Content = append(out.Content, yamlStringNode(k), val)
		}
		return out, nil
	case []any:
		if depth > yamlMaxConfigDepth {
			return nil, fmt.Errorf("nested deeper than %d levels", yamlMaxConfigDepth)
		}
		out := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for i, e := range v {
			val, err := yamlValueNode(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out.Content = append(out.Content, val)
		}
		return out, nil
	}
	// Other Go values (typed maps and slices, structs): their JSON form,
	// which is what the service stores.
	rv := reflect.ValueOf(v)
	if (rv.Kind() == reflect.Map || rv.Kind() == reflect.Slice || rv.Kind() == reflect.Pointer) && rv.IsNil() {
		return yamlValueNode(nil, depth)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("value is not JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("value is not JSON: %w", err)
	}
	return yamlValueNode(generic, depth)
}

func yamlUintNode(u uint64) (*yaml.Node, error) {
	if u <= math.MaxInt64 {
		return yamlIntNode(int64(u)), nil
	}
	return yamlFloatNode(float64(u))
}

// yamlCheckString refuses strings no document can carry: invalid UTF-8
// and NUL.
func yamlCheckString(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("invalid UTF-8")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return errors.New("NUL characters are not allowed")
	}
	return nil
}

// yamlCheckName refuses control characters other than newline and tab in
// a workflow's name.
func yamlCheckName(name string) error {
	if err := yamlCheckString(name); err != nil {
		return fmt.Errorf("name: %w", err)
	}
	for _, r := range name {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return fmt.Errorf("name: control character %U is not allowed", r)
		}
	}
	return nil
}

// ---- import ----

// ParseYAML reads a YAML document (as ExportYAML writes it) into a create body (Input) without a project id; graph
// validation is the caller's (it runs the same rules as a create). It must never panic on any input.
func ParseYAML(doc []byte) (in Input, err error) {
	defer func() {
		if r := recover(); r != nil {
			in, err = Input{}, fmt.Errorf("%w: %v", errYAMLPanic, r)
		}
	}()
	if len(doc) > yamlMaxBytes {
		return Input{}, &YAMLError{Msg: fmt.Sprintf("document is larger than 1 MiB (%d bytes)", len(doc))}
	}
	if i := bytes.IndexByte(doc, 0); i >= 0 {
		return Input{}, &YAMLError{Line: bytes.Count(doc[:i], []byte("\n")) + 1, Msg: "NUL characters are not allowed"}
	}

	dec := yaml.NewDecoder(bytes.NewReader(doc))
	var file yaml.Node
	if err := dec.Decode(&file); err != nil {
		if errors.Is(err, io.EOF) {
			return Input{}, &YAMLError{Msg: "empty document"}
		}
		return Input{}, yamlLibError(err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return Input{}, yamlLibError(err)
		}
		return Input{}, yamlErrorf(&next, "a file holds one workflow document, found another")
	}
	if err := yamlCheckTree(&file, 0); err != nil {
		return Input{}, err
	}
	if file.Kind != yaml.DocumentNode || len(file.Content) != 1 {
		return Input{}, &YAMLError{Msg: "empty document"}
	}
	return yamlParseRoot(file.Content[0])
}

// yamlCheckTree refuses what the document format leaves out everywhere:
// anchors and aliases (no alias bombs, no shared values), tags other than
// the core schema's, NUL characters, invalid UTF-8 and deep nesting.
func yamlCheckTree(n *yaml.Node, depth int) error {
	if depth > yamlMaxDepth {
		return yamlErrorf(n, "document is nested deeper than %d levels", yamlMaxDepth)
	}
	if n.Kind == yaml.AliasNode {
		return yamlErrorf(n, "aliases (*%s) are not supported", n.Value)
	}
	if n.Anchor != "" {
		return yamlErrorf(n, "anchors (&%s) are not supported", n.Anchor)
	}
	tag := n.ShortTag()
	switch n.Kind {
	case yaml.ScalarNode:
		switch tag {
		case "!!str", "!!int", "!!float", "!!bool", "!!null", "!!timestamp":
		case "!!merge":
			if n.Style&yaml.TaggedStyle != 0 {
				return yamlErrorf(n, "unsupported tag %s", tag)
			}
		default:
			return yamlErrorf(n, "unsupported tag %s", tag)
		}
		if n.Style&yaml.TaggedStyle != 0 {
			// An explicit tag must fit its value (!!int abc does not).
			var v any
			if err := n.Decode(&v); err != nil {
				return yamlErrorf(n, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
			}
		}
		if err := yamlCheckString(n.Value); err != nil {
			return yamlErrorf(n, "%v", err)
		}
	case yaml.MappingNode:
		if tag != "!!map" {
			return yamlErrorf(n, "unsupported tag %s", tag)
		}
	case yaml.SequenceNode:
		if tag != "!!seq" {
			return yamlErrorf(n, "unsupported tag %s", tag)
		}
	case yaml.DocumentNode:
	default:
		return yamlErrorf(n, "unsupported YAML node")
	}
	for _, c := range n.Content {
		if err := yamlCheckTree(c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// yamlField is one field of a mapping with a fixed set of fields.
type yamlField struct {
	key, value *yaml.Node
}

// yamlFields reads a mapping whose field names are fixed: unknown and
// repeated fields are errors naming the field and its line.
func yamlFields(m *yaml.Node, what string, known ...string) (map[string]yamlField, error) {
	if m.Kind != yaml.MappingNode {
		return nil, yamlErrorf(m, "%s must be a mapping", what)
	}
	out := make(map[string]yamlField, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				return nil, yamlErrorf(k, "merge keys (<<) are not supported")
			}
			if k.Kind == yaml.ScalarNode {
				return nil, yamlErrorf(k, "unknown field %q in %s", k.Value, what)
			}
			return nil, yamlErrorf(k, "field names of %s must be strings", what)
		}
		if !slices.Contains(known, k.Value) {
			return nil, yamlErrorf(k, "unknown field %q in %s (known: %s)", k.Value, what, strings.Join(known, ", "))
		}
		if prev, dup := out[k.Value]; dup {
			return nil, yamlErrorf(k, "field %q repeated in %s (first on line %d)", k.Value, what, prev.key.Line)
		}
		out[k.Value] = yamlField{key: k, value: v}
	}
	return out, nil
}

func yamlIsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// yamlString reads a text field; any scalar is taken as written (key: 1
// is the key "1"), null as empty.
func yamlString(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", yamlErrorf(n, "%s must be a string", what)
	}
	if yamlIsNull(n) {
		return "", nil
	}
	return n.Value, nil
}

// yamlScalar decodes a scalar into a JSON-compatible value: nil, bool,
// string, int64 (integers that fit) or float64.
func yamlScalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!str", "!!timestamp", "!!merge":
		return n.Value, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, yamlErrorf(n, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	switch v := v.(type) {
	case nil, bool, string:
		return v, nil
	case int:
		return int64(v), nil
	case int64:
		return v, nil
	case uint64:
		if v <= math.MaxInt64 {
			return int64(v), nil
		}
		return float64(v), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, yamlErrorf(n, "%s is not a JSON number", n.Value)
		}
		return v, nil
	}
	return nil, yamlErrorf(n, "unsupported value %q", n.Value)
}

// yamlInt reads an integer field.
func yamlInt(n *yaml.Node, what string) (int64, error) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
		v, err := yamlScalar(n)
		if err != nil {
			return 0, err
		}
		if i, ok := v.(int64); ok {
			return i, nil
		}
		return 0, yamlErrorf(n, "%s %s is out of range", what, n.Value)
	}
	return 0, yamlErrorf(n, "%s must be an integer", what)
}

// yamlNumber reads a number field.
func yamlNumber(n *yaml.Node, what string) (float64, error) {
	if n.Kind == yaml.ScalarNode {
		if tag := n.ShortTag(); tag == "!!int" || tag == "!!float" {
			v, err := yamlScalar(n)
			if err != nil {
				return 0, err
			}
			switch v := v.(type) {
			case int64:
				return float64(v), nil
			case float64:
				return v, nil
			}
		}
	}
	return 0, yamlErrorf(n, "%s must be a number", what)
}

func yamlParseRoot(root *yaml.Node) (Input, error) {
	if root.Kind != yaml.MappingNode {
		return Input{}, yamlErrorf(root, "the document must be a mapping (version, name, nodes, edges)")
	}
	fields, err := yamlFields(root, "the document", "version", "name", "max_concurrent_runs", "nodes", "edges")
	if err != nil {
		return Input{}, err
	}
	var in Input
	if f, ok := fields["version"]; ok && !yamlIsNull(f.value) {
		v := f.value
		if v.Kind != yaml.ScalarNode {
			return Input{}, yamlErrorf(v, "version must be %d", YAMLVersion)
		}
		if v.ShortTag() != "!!int" {
			return Input{}, yamlErrorf(v, "unsupported version %s", v.Value)
		}
		n, err := yamlScalar(v)
		if err != nil {
			return Input{}, err
		}
		if n != int64(YAMLVersion) {
			return Input{}, yamlErrorf(v, "unsupported version %s", v.Value)
		}
	}
	if f, ok := fields["name"]; ok {
		if in.Name, err = yamlString(f.value, "name"); err != nil {
			return Input{}, err
		}
		if err := yamlCheckName(in.Name); err != nil {
			return Input{}, yamlErrorf(f.value, "%v", err)
		}
	}
	if f, ok := fields["max_concurrent_runs"]; ok && !yamlIsNull(f.value) {
		n, err := yamlInt(f.value, "max_concurrent_runs")
		if err != nil {
			return Input{}, err
		}
		in.MaxConcurrentRuns = &n
	}
	if f, ok := fields["nodes"]; ok && !yamlIsNull(f.value) {
		if f.value.Kind != yaml.SequenceNode {
			return Input{}, yamlErrorf(f.value, "nodes must be a list")
		}
		in.Nodes = make([]NodeInput, 0, len(f.value.Content))
		for i, item := range f.value.Content {
			n, err := yamlParseNode(item, i)
			if err != nil {
				return Input{}, err
			}
			in.Nodes = append(in.Nodes, n)
		}
	}
	if f, ok := fields["edges"]; ok && !yamlIsNull(f.value) {
		if f.value.Kind != yaml.SequenceNode {
			return Input{}, yamlErrorf(f.value, "edges must be a list")
		}
		in.Edges = make([]EdgeInput, 0, len(f.value.Content))
		for i, item := range f.value.Content {
			e, err := yamlParseEdge(item, i)
			if err != nil {
				return Input{}, err
			}
			in.Edges = append(in.Edges, e)
		}
	}
	return in, nil
}

func yamlParseNode(item *yaml.Node, i int) (NodeInput, error) {
	what := fmt.Sprintf("nodes[%d]", i)
	fields, err := yamlFields(item, what, "key", "kind", "ordinal", "position", "parent", "config")
	if err != nil {
		return NodeInput{}, err
	}
	var n NodeInput
	if f, ok := fields["key"]; ok {
		if n.Key, err = yamlString(f.value, what+".key"); err != nil {
			return NodeInput{}, err
		}
		if n.Key != "" {
			what = fmt.Sprintf("node %q", n.Key)
		}
	}
	if f, ok := fields["kind"]; ok {
		if n.Kind, err = yamlString(f.value, what+": kind"); err != nil {
			return NodeInput{}, err
		}
	}
	if f, ok := fields["ordinal"]; ok && !yamlIsNull(f.value) {
		o, err := yamlInt(f.value, what+": ordinal")
		if err != nil {
			return NodeInput{}, err
		}
		n.Ordinal = &o
	}
	if f, ok := fields["position"]; ok && !yamlIsNull(f.value) {
		pf, err := yamlFields(f.value, what+": position", "x", "y")
		if err != nil {
			return NodeInput{}, err
		}
		var pos Position
		if c, ok := pf["x"]; ok {
			if pos.X, err = yamlNumber(c.value, what+": position.x"); err != nil {
				return NodeInput{}, err
			}
		}
		if c, ok := pf["y"]; ok {
			if pos.Y, err = yamlNumber(c.value, what+": position.y"); err != nil {
				return NodeInput{}, err
			}
		}
		n.Position = &pos
	}
	if f, ok := fields["parent"]; ok && !yamlIsNull(f.value) {
		p, err := yamlString(f.value, what+": parent")
		if err != nil {
			return NodeInput{}, err
		}
		n.ParentNodeKey = &p
	}
	if f, ok := fields["config"]; ok && !yamlIsNull(f.value) {
		if f.value.Kind != yaml.MappingNode {
			return NodeInput{}, yamlErrorf(f.value, "%s: config must be a mapping", what)
		}
		v, err := yamlValue(f.value, 1, what+": config")
		if err != nil {
			return NodeInput{}, err
		}
		n.Config = v.(map[string]any)
	}
	return n, nil
}

func yamlParseEdge(item *yaml.Node, i int) (EdgeInput, error) {
	what := fmt.Sprintf("edges[%d]", i)
	fields, err := yamlFields(item, what, "source", "handle", "target")
	if err != nil {
		return EdgeInput{}, err
	}
	var e EdgeInput
	for _, c := range []struct {
		name string
		dst  *string
	}{{"source", &e.Source}, {"handle", &e.SourceHandle}, {"target", &e.Target}} {
		if f, ok := fields[c.name]; ok {
			if *c.dst, err = yamlString(f.value, what+"."+c.name); err != nil {
				return EdgeInput{}, err
			}
		}
	}
	return e, nil
}

// yamlValue converts a config value to its JSON-compatible Go form:
// map[string]any, []any, string, int64, float64, bool or nil.
func yamlValue(n *yaml.Node, depth int, what string) (any, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return yamlScalar(n)
	case yaml.SequenceNode:
		if depth > yamlMaxConfigDepth {
			return nil, yamlErrorf(n, "%s is nested deeper than %d levels", what, yamlMaxConfigDepth)
		}
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := yamlValue(c, depth+1, what)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		if depth > yamlMaxConfigDepth {
			return nil, yamlErrorf(n, "%s is nested deeper than %d levels", what, yamlMaxConfigDepth)
		}
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
					return nil, yamlErrorf(k, "%s: merge keys (<<) are not supported", what)
				}
				desc := "a " + strings.TrimPrefix(k.ShortTag(), "!!")
				if k.Kind == yaml.ScalarNode {
					desc = fmt.Sprintf("%s (%s)", k.Value, strings.TrimPrefix(k.ShortTag(), "!!"))
				}
				return nil, yamlErrorf(k, "%s: map keys must be strings, found %s; quote it", what, desc)
			}
			if _, dup := out[k.Value]; dup {
				return nil, yamlErrorf(k, "%s: key %q repeated", what, k.Value)
			}
			val, err := yamlValue(v, depth+1, what)
			if err != nil {
				return nil, err
			}
			out[k.Value] = val
		}
		return out, nil
	}
	return nil, yamlErrorf(n, "%s: unsupported YAML node", what)
}
