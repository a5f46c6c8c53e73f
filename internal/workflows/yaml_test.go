package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"
)

// yamlTestWorkflow turns a parsed document into the workflow the service
// would store from it: defaults filled (ordinal: the index, position 0,0,
// config {}), no ids.
func yamlTestWorkflow(in Input) *Workflow {
	w := &Workflow{Name: in.Name, MaxConcurrentRuns: in.MaxConcurrentRuns, Nodes: []Node{}, Edges: []Edge{}}
	for i, n := range in.Nodes {
		node := Node{Key: n.Key, Kind: n.Kind, Ordinal: int64(i), Config: n.Config, ParentNodeKey: n.ParentNodeKey}
		if n.Ordinal != nil {
			node.Ordinal = *n.Ordinal
		}
		if n.Position != nil {
			node.Position = *n.Position
		}
		if node.Config == nil {
			node.Config = map[string]any{}
		}
		w.Nodes = append(w.Nodes, node)
	}
	for _, e := range in.Edges {
		w.Edges = append(w.Edges, Edge{Source: e.Source, SourceHandle: e.SourceHandle, Target: e.Target})
	}
	return w
}

func yamlTestPtr[T any](v T) *T { return &v }

// yamlTestSample is a workflow as the service holds it, its config decoded
// from JSON (numbers are float64).
func yamlTestSample(maxRuns *int64) *Workflow {
	return &Workflow{
		ID:                "5b0e7f9c-1d2a-4c4e-9a57-3f1de0c3a001",
		ProjectID:         "9f1c2d3e-4b5a-4687-8990-aabbccddeeff",
		Name:              "Nightly triage",
		CreatedAt:         time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC),
		MaxConcurrentRuns: maxRuns,
		Nodes: []Node{
			{ID: "11111111-1111-4111-8111-111111111111", Key: "fetch", Kind: "http_request", Ordinal: 0,
				Position: Position{X: 0, Y: 120},
				Config: map[string]any{
					"url":             "https://example.com/{{ input.id }}",
					"method":          "GET",
					"headers":         map[string]any{"Accept": "application/json", "X-Trace": "{{ run.id }}"},
					"timeout_seconds": float64(30),
				}},
			{Key: "decide", Kind: "gate", Ordinal: 1, Position: Position{X: 240.25, Y: -80.5},
				Config: map[string]any{"condition": "nodes.fetch.output.status == 200"}},
			{Key: "each_item", Kind: "loop", Ordinal: 2, Position: Position{X: 480, Y: 0},
				Config: map[string]any{"items": "nodes.fetch.output.body.items", "mode": "parallel", "parallelism": float64(4)}},
			{Key: "shape", Kind: "transform", Ordinal: -3, Position: Position{X: 0.125, Y: 1e-7},
				ParentNodeKey: yamlTestPtr("each_item"),
				Config:        map[string]any{"mapping": map[string]any{"id": "item.id", "n": "index"}}},
			{Key: "mail", Kind: "notify_email", Ordinal: 4,
				Config: map[string]any{
					"to":      []any{"ops@example.com", "dev@example.com"},
					"subject": "yes",
					"body":    "Line one\nLine two: {{ nodes.fetch.output.status }}\n",
				}},
			{Key: "sync", Kind: "app", Ordinal: 5,
				Config: map[string]any{
					"app_id": "22222222-2222-4222-8222-222222222222",
					"action": "sync",
					"params": map[string]any{
						"dry_run": true,
						"cursor":  nil,
						"ratio":   0.25,
						"limit":   float64(1e6),
						"since":   "2024-01-01",
						"list":    []any{"a", float64(2), false, nil, map[string]any{"deep": []any{}}, "123"},
						"empty":   map[string]any{},
					},
				}},
			{Key: "done", Kind: "end", Ordinal: 6, Config: map[string]any{}},
			{Key: "failed", Kind: "end", Ordinal: 7, Config: map[string]any{"status": "failed", "message": "status {{ nodes.fetch.output.status }}"}},
		},
		Edges: []Edge{
			{ID: "e1", Source: "fetch", SourceHandle: "out", Target: "decide"},
			{ID: "e2", Source: "decide", SourceHandle: "true", Target: "each_item"},
			{ID: "e3", Source: "decide", SourceHandle: "false", Target: "failed"},
			{ID: "e4", Source: "each_item", SourceHandle: "out", Target: "mail"},
			{ID: "e5", Source: "mail", SourceHandle: "out", Target: "sync"},
			{ID: "e6", Source: "sync", SourceHandle: "out", Target: "done"},
		},
		Steps: []Step{{ID: "s1", StepKey: "ignored", Kind: "agent"}},
	}
}

const yamlTestSampleDoc = `version: 1
name: Nightly triage
max_concurrent_runs: 2
nodes:
  - key: fetch
    kind: http_request
    ordinal: 0
    position: {x: 0, y: 120}
    config:
      headers:
        Accept: application/json
        X-Trace: '{{ run.id }}'
      method: GET
      timeout_seconds: 30
      url: https://example.com/{{ input.id }}
  - key: decide
    kind: gate
    ordinal: 1
    position: {x: 240.25, y: -80.5}
    config:
      condition: nodes.fetch.output.status == 200
  - key: each_item
    kind: loop
    ordinal: 2
    position: {x: 480, y: 0}
    config:
      items: nodes.fetch.output.body.items
      mode: parallel
      parallelism: 4
  - key: shape
    kind: transform
    ordinal: -3
    position: {x: 0.125, y: 1e-07}
    parent: each_item
    config:
      mapping:
        id: item.id
        "n": index
  - key: mail
    kind: notify_email
    ordinal: 4
    position: {x: 0, y: 0}
    config:
      body: |
        Line one
        Line two: {{ nodes.fetch.output.status }}
      subject: "yes"
      to:
        - ops@example.com
        - dev@example.com
  - key: sync
    kind: app
    ordinal: 5
    position: {x: 0, y: 0}
    config:
      action: sync
      app_id: 22222222-2222-4222-8222-222222222222
      params:
        cursor: null
        dry_run: true
        empty: {}
        limit: 1000000
        list:
          - a
          - 2
          - false
          - null
          - deep: []
          - "123"
        ratio: 0.25
        since: "2024-01-01"
  - key: done
    kind: end
    ordinal: 6
    position: {x: 0, y: 0}
  - key: failed
    kind: end
    ordinal: 7
    position: {x: 0, y: 0}
    config:
      message: status {{ nodes.fetch.output.status }}
      status: failed
edges:
  - {source: fetch, handle: out, target: decide}
  - {source: decide, handle: "true", target: each_item}
  - {source: decide, handle: "false", target: failed}
  - {source: each_item, handle: out, target: mail}
  - {source: mail, handle: out, target: sync}
  - {source: sync, handle: out, target: done}
`

func yamlTestNotPanic(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, errYAMLPanic) {
		t.Fatalf("ParseYAML panicked: %v", err)
	}
}

func TestYAMLRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxRuns *int64
	}{{"capped", yamlTestPtr(int64(2))}, {"unlimited", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			w := yamlTestSample(tc.maxRuns)
			first, err := ExportYAML(w)
			if err != nil {
				t.Fatalf("export: %v", err)
			}
			want := yamlTestSampleDoc
			if tc.maxRuns == nil {
				want = strings.Replace(want, "max_concurrent_runs: 2\n", "", 1)
			}
			if string(first) != want {
				t.Fatalf("export:\n%s\nwant:\n%s", first, want)
			}
			for _, leak := range []string{w.ID, w.ProjectID, w.Nodes[0].ID, "e1", "2025", "ignored", "steps"} {
				if bytes.Contains(first, []byte(leak)) {
					t.Errorf("export holds %q", leak)
				}
			}

			in, err := ParseYAML(first)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if in.ProjectID != "" || in.Name != "Nightly triage" || len(in.Nodes) != 8 || len(in.Edges) != 6 || in.Steps != nil {
				t.Fatalf("parse: %+v", in)
			}
			if !reflect.DeepEqual(in.MaxConcurrentRuns, tc.maxRuns) {
				t.Errorf("max_concurrent_runs = %v, want %v", in.MaxConcurrentRuns, tc.maxRuns)
			}
			fetch := in.Nodes[0]
			if fetch.ID != "" || fetch.Key != "fetch" || fetch.Kind != "http_request" || *fetch.Ordinal != 0 || *fetch.Position != (Position{0, 120}) || fetch.ParentNodeKey != nil {
				t.Errorf("fetch = %+v", fetch)
			}
			wantFetch := map[string]any{
				"url":             "https://example.com/{{ input.id }}",
				"method":          "GET",
				"headers":         map[string]any{"Accept": "application/json", "X-Trace": "{{ run.id }}"},
				"timeout_seconds": int64(30),
			}
			if !reflect.DeepEqual(fetch.Config, wantFetch) {
				t.Errorf("fetch config = %#v", fetch.Config)
			}
			if p := in.Nodes[1].Position; p == nil || *p != (Position{240.25, -80.5}) {
				t.Errorf("decide position = %v", p)
			}
			shape := in.Nodes[3]
			if *shape.Ordinal != -3 || shape.ParentNodeKey == nil || *shape.ParentNodeKey != "each_item" || *shape.Position != (Position{0.125, 1e-7}) {
				t.Errorf("shape = %+v", shape)
			}
			if got := in.Nodes[4].Config["body"]; got != "Line one\nLine two: {{ nodes.fetch.output.status }}\n" {
				t.Errorf("mail body = %q", got)
			}
			wantParams := map[string]any{
				"dry_run": true, "cursor": nil, "ratio": 0.25, "limit": int64(1000000), "since": "2024-01-01",
				"list":  []any{"a", int64(2), false, nil, map[string]any{"deep": []any{}}, "123"},
				"empty": map[string]any{},
			}
			if got := in.Nodes[5].Config["params"]; !reflect.DeepEqual(got, wantParams) {
				t.Errorf("sync params = %#v", got)
			}
			// An empty config is left out of the document: the create body
			// then has none and the service stores {}.
			if in.Nodes[6].Config != nil {
				t.Errorf("done config = %#v, want absent", in.Nodes[6].Config)
			}
			wantEdges := []EdgeInput{
				{Source: "fetch", SourceHandle: "out", Target: "decide"},
				{Source: "decide", SourceHandle: "true", Target: "each_item"},
				{Source: "decide", SourceHandle: "false", Target: "failed"},
				{Source: "each_item", SourceHandle: "out", Target: "mail"},
				{Source: "mail", SourceHandle: "out", Target: "sync"},
				{Source: "sync", SourceHandle: "out", Target: "done"},
			}
			if !reflect.DeepEqual(in.Edges, wantEdges) {
				t.Errorf("edges = %+v", in.Edges)
			}

			second, err := ExportYAML(yamlTestWorkflow(in))
			if err != nil {
				t.Fatalf("second export: %v", err)
			}
			if !bytes.Equal(first, second) {
				t.Fatalf("export -> import -> export differs:\n%s\n---\n%s", first, second)
			}
		})
	}
}

func TestYAMLExportStable(t *testing.T) {
	cfg := map[string]any{}
	for i := range 60 {
		cfg[string(rune('a'+i%26))+strings.Repeat("x", i)] = map[string]any{"v": float64(i), "w": []any{i, "s"}}
	}
	w := &Workflow{Name: "stable", Nodes: []Node{{Key: "a", Kind: "transform", Config: cfg}}}
	first, err := ExportYAML(w)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		again, err := ExportYAML(w)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatalf("export is not stable:\n%s\n---\n%s", first, again)
		}
	}
	if !bytes.Contains(first, []byte("  - key: a\n    kind: transform\n    ordinal: 0\n    position: {x: 0, y: 0}\n    config:\n      a:\n")) {
		t.Errorf("unexpected layout:\n%s", first)
	}
	if !bytes.HasSuffix(first, []byte("\nedges: []\n")) {
		t.Errorf("no edges should read edges: []:\n%s", first)
	}
}

func TestYAMLExportNumbers(t *testing.T) {
	for _, tc := range []struct {
		in   any
		text string
		back any
	}{
		{float64(30), "30", int64(30)},
		{float64(-7), "-7", int64(-7)},
		{math.Copysign(0, -1), "0", int64(0)},
		{0.25, "0.25", 0.25},
		{-1.5, "-1.5", -1.5},
		{float64(1e6), "1000000", int64(1000000)},
		{float64(9007199254740993), "9007199254740992", int64(9007199254740992)},
		{float64(1 << 53), "9007199254740992", int64(1 << 53)},
		{float64(1<<53 + 2), "9.007199254740994e+15", float64(1<<53 + 2)},
		{float64(70000000008001100), "7.00000000080011e+16", float64(70000000008001100)},
		{float64(1e20), "1e+20", float64(1e20)},
		{float64(1e21), "1e+21", float64(1e21)},
		{1e-7, "1e-07", 1e-7},
		{float32(0.5), "0.5", 0.5},
		{int(3), "3", int64(3)},
		{int64(math.MaxInt64), "9223372036854775807", int64(math.MaxInt64)},
		{uint64(math.MaxUint64), "1.8446744073709552e+19", float64(math.MaxUint64)},
		{json.Number("12"), "12", int64(12)},
		{json.Number("1.5"), "1.5", 1.5},
		{map[string]string{"b": "2", "a": "1"}, "\n        a: \"1\"\n        b: \"2\"", map[string]any{"a": "1", "b": "2"}},
		{[]string{"x"}, "\n        - x", []any{"x"}},
	} {
		w := &Workflow{Name: "n", Nodes: []Node{{Key: "a", Kind: "transform", Config: map[string]any{"v": tc.in}}}}
		doc, err := ExportYAML(w)
		if err != nil {
			t.Errorf("%#v: %v", tc.in, err)
			continue
		}
		if !strings.Contains(string(doc), "\n      v: "+tc.text+"\n") && !strings.Contains(string(doc), "\n      v:"+tc.text+"\n") {
			t.Errorf("%#v: want v: %s in\n%s", tc.in, tc.text, doc)
		}
		in, err := ParseYAML(doc)
		if err != nil {
			t.Errorf("%#v: parse: %v", tc.in, err)
			continue
		}
		if got := in.Nodes[0].Config["v"]; !reflect.DeepEqual(got, tc.back) {
			t.Errorf("%#v: read back %#v, want %#v", tc.in, got, tc.back)
		}
	}
}

func TestYAMLExportStrings(t *testing.T) {
	values := []string{
		"", "yes", "No", "on", "y", "true", "null", "~", "123", "0x1F", "1e3", "1:20", ".inf", "2024-01-01",
		"a: b", "- x", "#c", "a #c", " lead", "trail ", "{x}", "[x]", "*x", "&x", "!x", "%x", "@x", "`x", "'", "\"",
		"<<", "---", "...", "tab\there", "é ünïcode ✓", "\x01\x1f\x7f", "\u0085\u2028\u2029\ufeff",
		"one\ntwo", "one\ntwo\n", "\tlead\nx", "x\n\ty", "\t\n\n-", "one\n\n", "\n", "\nlead", "  indented\nmore", "trail \nx", "a\r\nb", "\r",
	}
	cfg := map[string]any{}
	for i, v := range values {
		cfg[string(rune('A'+i%26))+strings.Repeat("k", i/26)] = v
		cfg[v] = i // the same strings as keys
	}
	edge := Edge{Source: "one\ntwo", SourceHandle: "yes", Target: "a: b"}
	w := &Workflow{Name: "strings\tand\nlines", Nodes: []Node{{Key: "null", Kind: "true", Config: cfg}}, Edges: []Edge{edge}}
	doc, err := ExportYAML(w)
	if err != nil {
		t.Fatal(err)
	}
	in, err := ParseYAML(doc)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, doc)
	}
	if in.Name != w.Name || in.Nodes[0].Key != "null" || in.Nodes[0].Kind != "true" {
		t.Errorf("name/key/kind = %q %q %q", in.Name, in.Nodes[0].Key, in.Nodes[0].Kind)
	}
	if !reflect.DeepEqual(in.Edges, []EdgeInput{{Source: edge.Source, SourceHandle: edge.SourceHandle, Target: edge.Target}}) {
		t.Errorf("edges = %q", in.Edges)
	}
	for k, v := range cfg {
		got := in.Nodes[0].Config[k]
		if n, ok := v.(int); ok {
			v = int64(n)
		}
		if got != v {
			t.Errorf("config[%q] = %#v, want %#v", k, got, v)
		}
	}
	if len(in.Nodes[0].Config) != len(cfg) {
		t.Errorf("config has %d keys, want %d", len(in.Nodes[0].Config), len(cfg))
	}
	again, err := ExportYAML(yamlTestWorkflow(in))
	if err != nil || !bytes.Equal(doc, again) {
		t.Errorf("re-export differs (%v):\n%s\n---\n%s", err, doc, again)
	}
}

// TestYAMLExportRandomStrings puts random strings of YAML's awkward
// characters everywhere a string goes, flow context (edges, positions'
// neighbours) included, and reads them back unchanged.
func TestYAMLExportRandomStrings(t *testing.T) {
	pieces := []string{
		"a", "Z", "0", "9", "-", "+", ".", " ", "  ", "\t", "\n", "\r", ":", ": ", " #", "#", ",", "[", "]", "{", "}",
		"?", "? ", "- ", "*", "&", "!", "|", ">", "'", "\"", "%", "@", "`", "\\", "~", "=", "<<", "---", "...",
		"yes", "null", "true", "0x1", "1e3", ".inf", "\u0085", "\u2028", "\u2029", "\ufeff", "\u00a0", "\x01",
		"\x7f", "\u200b", "é", "✓", "\U0001F600", "\n\n", " \n", "\n ",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	for range 3000 {
		name := strings.Map(func(r rune) rune {
			if unicode.IsControl(r) && r != '\n' && r != '\t' {
				return -1
			}
			return r
		}, str())
		parent := str()
		cfg := map[string]any{}
		for range 4 {
			cfg[str()] = []any{str(), map[string]any{str(): str()}}
		}
		w := &Workflow{Name: name, Nodes: []Node{{Key: str(), Kind: str(), Ordinal: 1, ParentNodeKey: &parent, Config: cfg}},
			Edges: []Edge{{Source: str(), SourceHandle: str(), Target: str()}}}
		doc, err := ExportYAML(w)
		if err != nil {
			t.Fatalf("export: %v", err)
		}
		in, err := ParseYAML(doc)
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, doc)
		}
		got := yamlTestWorkflow(in)
		want := *w
		if want.Edges[0].SourceHandle == "" {
			got.Edges[0].SourceHandle = "" // left out, read back empty
		}
		if !reflect.DeepEqual(yamlTestNormal(got), yamlTestNormal(&want)) {
			t.Fatalf("read back differs:\n%#v\n%#v\n%s", got, w, doc)
		}
		again, err := ExportYAML(got)
		if err != nil || !bytes.Equal(doc, again) {
			t.Fatalf("re-export differs (%v):\n%s\n---\n%s", err, doc, again)
		}
	}
}

func TestYAMLExportRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    *Workflow
		want string
	}{
		{"nil", nil, "no workflow"},
		{"control in name", &Workflow{Name: "a\x01b"}, "control character"},
		{"NUL in name", &Workflow{Name: "a\x00b"}, "NUL"},
		{"NaN", &Workflow{Name: "n", Nodes: []Node{{Key: "a", Config: map[string]any{"x": math.NaN()}}}}, "not a JSON number"},
		{"Inf position", &Workflow{Name: "n", Nodes: []Node{{Key: "a", Position: Position{X: math.Inf(1)}}}}, "position.x"},
		{"NUL in config", &Workflow{Name: "n", Nodes: []Node{{Key: "a", Config: map[string]any{"x": []any{"\x00"}}}}}, "NUL"},
		{"NUL in config key", &Workflow{Name: "n", Nodes: []Node{{Key: "a", Config: map[string]any{"\x00": 1}}}}, "NUL"},
		{"bad UTF-8", &Workflow{Name: "n", Nodes: []Node{{Key: "a", Config: map[string]any{"x": "\xff"}}}}, "UTF-8"},
		{"NUL in edge", &Workflow{Name: "n", Edges: []Edge{{Source: "\x00"}}}, "edges[0].source"},
		{"not JSON", &Workflow{Name: "n", Nodes: []Node{{Key: "a", Config: map[string]any{"x": make(chan int)}}}}, "not JSON"},
		{"too deep", &Workflow{Name: "n", Nodes: []Node{{Key: "a", Config: yamlTestDeep(yamlMaxConfigDepth)}}}, "deeper than"},
	} {
		_, err := ExportYAML(tc.w)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	// The deepest config the format carries exports and reads back.
	deep := &Workflow{Name: "n", Nodes: []Node{{Key: "a", Config: yamlTestDeep(yamlMaxConfigDepth - 1)}}}
	doc, err := ExportYAML(deep)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseYAML(doc); err != nil {
		t.Fatalf("deepest config: %v", err)
	}
}

// yamlTestDeep is a config of extra levels below the config mapping.
func yamlTestDeep(extra int) map[string]any {
	var v any = "leaf"
	for i := range extra {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"k": v}
		}
	}
	return map[string]any{"k": v}
}

func TestYAMLParseHandWritten(t *testing.T) {
	t.Run("minimal", func(t *testing.T) {
		in, err := ParseYAML([]byte("name: Hello\nnodes:\n  - key: a\n    kind: end\n"))
		if err != nil {
			t.Fatal(err)
		}
		want := Input{Name: "Hello", Nodes: []NodeInput{{Key: "a", Kind: "end"}}}
		if !reflect.DeepEqual(in, want) {
			t.Fatalf("got %+v, want %+v", in, want)
		}
	})
	t.Run("full", func(t *testing.T) {
		doc := `# A hand-written flow.
version: 1
name: "Triage: nightly"
max_concurrent_runs: 3
nodes:
  - key: fetch
    kind: http_request
    position: {x: 10, y: 2.5}
    config:
      url: https://example.com
      timeout_seconds: 0x1E       # hex is fine
      retries: 1_000
      big: 18446744073709551615
      when: 2024-01-01
      stamp: !!timestamp 2001-12-14t21:59:43.10-05:00
      forced: !!str 12
      as_float: !!float 2
      note: >
        folded
        text
  - {key: check, kind: gate, ordinal: 7, parent: ~, config: {condition: "true"}}
edges:
  - source: fetch
    target: check
  - {source: check, handle: "true", target: fetch}
`
		in, err := ParseYAML([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if in.Name != "Triage: nightly" || *in.MaxConcurrentRuns != 3 || len(in.Nodes) != 2 {
			t.Fatalf("got %+v", in)
		}
		fetch := in.Nodes[0]
		if fetch.Ordinal != nil || *fetch.Position != (Position{10, 2.5}) {
			t.Errorf("fetch = %+v", fetch)
		}
		wantCfg := map[string]any{
			"url": "https://example.com", "timeout_seconds": int64(30), "retries": int64(1000),
			"big": float64(math.MaxUint64), "when": "2024-01-01", "stamp": "2001-12-14t21:59:43.10-05:00",
			"forced": "12", "as_float": float64(2), "note": "folded text\n",
		}
		if !reflect.DeepEqual(fetch.Config, wantCfg) {
			t.Errorf("fetch config = %#v", fetch.Config)
		}
		check := in.Nodes[1]
		if *check.Ordinal != 7 || check.ParentNodeKey != nil || check.Config["condition"] != "true" {
			t.Errorf("check = %+v", check)
		}
		if !reflect.DeepEqual(in.Edges, []EdgeInput{{Source: "fetch", Target: "check"}, {Source: "check", SourceHandle: "true", Target: "fetch"}}) {
			t.Errorf("edges = %+v", in.Edges)
		}
	})
	t.Run("null sections", func(t *testing.T) {
		in, err := ParseYAML([]byte("version:\nname: x\nmax_concurrent_runs: null\nnodes:\nedges: ~\n"))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(in, Input{Name: "x"}) {
			t.Errorf("got %+v", in)
		}
	})
	t.Run("loose string fields", func(t *testing.T) {
		in, err := ParseYAML([]byte("name: 2024\nnodes:\n  - {key: 1, kind: end, parent: \"\"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if in.Name != "2024" || in.Nodes[0].Key != "1" || in.Nodes[0].ParentNodeKey == nil || *in.Nodes[0].ParentNodeKey != "" {
			t.Errorf("got %+v", in)
		}
	})
}

func TestYAMLParseErrors(t *testing.T) {
	deepFlow := "nodes:\n  - key: a\n    config: {k: " + strings.Repeat("[", yamlMaxConfigDepth) + strings.Repeat("]", yamlMaxConfigDepth) + "}\n"
	for _, tc := range []struct {
		name string
		doc  string
		want []string // substrings of the error
		line int      // the YAMLError's line, when not 0
	}{
		{"empty", "", []string{"empty document"}, 0},
		{"comments only", "# nothing\n\n", []string{"empty document"}, 0},
		{"list at top", "- a\n", []string{"must be a mapping"}, 1},
		{"scalar at top", "hello\n", []string{"must be a mapping"}, 1},
		{"syntax", "name: x\nnodes: [\n", []string{"invalid YAML"}, 0},
		{"unknown top-level", "name: x\ncolour: red\n", []string{`unknown field "colour"`}, 2},
		{"unknown node field", "nodes:\n  - key: a\n    kind: end\n    colour: red\n", []string{`unknown field "colour"`, "nodes[0]"}, 4},
		{"unknown edge field", "edges:\n  - {source: a, target: b}\n  - {source: a, target: b, weight: 2}\n", []string{`unknown field "weight"`, "edges[1]"}, 3},
		{"unknown position field", "nodes:\n  - key: a\n    position: {x: 1, z: 2}\n", []string{`unknown field "z"`, "position"}, 3},
		{"misspelt parent", "nodes:\n  - key: a\n    parent_node_key: b\n", []string{`unknown field "parent_node_key"`}, 3},
		{"repeated field", "name: a\nname: b\n", []string{`field "name" repeated`, "line 1"}, 2},
		{"repeated config key", "nodes:\n  - key: a\n    config:\n      x: 1\n      x: 2\n", []string{`key "x" repeated`, `node "a"`}, 5},
		{"version 2", "version: 2\nname: x\n", []string{"unsupported version 2"}, 1},
		{"version 0", "version: 0\n", []string{"unsupported version 0"}, 1},
		{"version text", "version: one\n", []string{"unsupported version one"}, 1},
		{"version list", "version: [1]\n", []string{"version must be 1"}, 1},
		{"anchor", "name: &n x\nnodes: []\n", []string{"anchors (&n) are not supported"}, 1},
		{"alias", "nodes:\n  - &a {key: a, kind: end}\n  - *a\n", []string{"not supported"}, 2},
		{"undefined alias", "name: *x\n", []string{"invalid YAML"}, 0},
		{"alias bomb", "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n", []string{"anchors (&a) are not supported"}, 1},
		{"merge key", "nodes:\n  - key: a\n    config:\n      <<: {x: 1}\n", []string{"merge keys"}, 4},
		{"non-string key", "nodes:\n  - key: fetch\n    config:\n      headers:\n        1: one\n", []string{`node "fetch"`, "map keys must be strings", "1 (int)"}, 5},
		{"bool key", "nodes:\n  - key: a\n    config: {true: 1}\n", []string{"map keys must be strings"}, 3},
		{"null key", "nodes:\n  - key: a\n    config: {~: 1}\n", []string{"map keys must be strings"}, 3},
		{"map key", "nodes:\n  - key: a\n    config: {? [a] : 1}\n", []string{"map keys must be strings", "a seq"}, 3},
		{"NUL byte", "name: a\n# \x00\n", []string{"NUL"}, 2},
		{"NUL escape in name", "name: \"a\\0b\"\n", []string{"NUL"}, 1},
		{"NUL escape in config", "nodes:\n  - key: a\n    config: {x: \"\\u0000\"}\n", []string{"NUL"}, 3},
		{"NUL escape in key", "nodes:\n  - key: a\n    config: {\"\\x00\": 1}\n", []string{"NUL"}, 3},
		{"control in name", "name: \"a\\x01b\"\n", []string{"control character U+0001"}, 1},
		{"DEL in name", "name: \"a\\x7fb\"\n", []string{"control character"}, 1},
		{"too large", "name: x\n# " + strings.Repeat("a", yamlMaxBytes) + "\n", []string{"larger than 1 MiB"}, 0},
		{"nodes string", "nodes: \"x\"\n", []string{"nodes must be a list"}, 1},
		{"nodes map", "nodes: {key: a}\n", []string{"nodes must be a list"}, 1},
		{"node scalar", "nodes: [1]\n", []string{"nodes[0] must be a mapping"}, 1},
		{"edges map", "edges: {source: a}\n", []string{"edges must be a list"}, 1},
		{"edge list", "edges: [[a, b]]\n", []string{"edges[0] must be a mapping"}, 1},
		{"key list", "nodes:\n  - key: [a]\n", []string{"nodes[0].key must be a string"}, 2},
		{"name map", "name: {a: b}\n", []string{"name must be a string"}, 1},
		{"edge source map", "edges:\n  - {source: {a: b}}\n", []string{"edges[0].source must be a string"}, 2},
		{"ordinal fraction", "nodes:\n  - key: a\n    ordinal: 1.5\n", []string{`node "a": ordinal must be an integer`}, 3},
		{"ordinal text", "nodes:\n  - key: a\n    ordinal: first\n", []string{"ordinal must be an integer"}, 3},
		{"ordinal huge", "nodes:\n  - key: a\n    ordinal: 9223372036854775808\n", []string{"out of range"}, 3},
		{"runs text", "max_concurrent_runs: two\n", []string{"max_concurrent_runs must be an integer"}, 1},
		{"position text", "nodes:\n  - key: a\n    position: {x: left}\n", []string{"position.x must be a number"}, 3},
		{"position scalar", "nodes:\n  - key: a\n    position: 5\n", []string{"position must be a mapping"}, 3},
		{"position nan", "nodes:\n  - key: a\n    position: {y: .nan}\n", []string{"not a JSON number"}, 3},
		{"config inf", "nodes:\n  - key: a\n    config: {x: -.inf}\n", []string{"not a JSON number"}, 3},
		{"config list", "nodes:\n  - key: a\n    config: [1, 2]\n", []string{`node "a": config must be a mapping`}, 3},
		{"config scalar", "nodes:\n  - key: a\n    config: yes\n", []string{"config must be a mapping"}, 3},
		{"custom tag", "name: !secret x\n", []string{"unsupported tag !secret"}, 1},
		{"binary", "nodes:\n  - key: a\n    config: {x: !!binary aGVsbG8=}\n", []string{"unsupported tag !!binary"}, 3},
		{"set", "nodes:\n  - key: a\n    config: {x: !!set {a, b}}\n", []string{"unsupported tag !!set"}, 3},
		{"mistagged", "nodes:\n  - key: a\n    config: {x: !!int abc}\n", []string{"cannot decode"}, 3},
		{"too deep", deepFlow, []string{"nested deeper than"}, 3},
		{"two documents", "name: a\n---\nname: b\n", []string{"one workflow document"}, 2},
		{"second document broken", "name: a\n---\n[\n", []string{"invalid YAML"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := ParseYAML([]byte(tc.doc))
			yamlTestNotPanic(t, err)
			if err == nil {
				t.Fatalf("no error; parsed %+v", in)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			var ye *YAMLError
			if !errors.As(err, &ye) {
				t.Fatalf("error %T is not a *YAMLError", err)
			}
			if tc.line != 0 && ye.Line != tc.line {
				t.Errorf("error %q: line %d, want %d", err, ye.Line, tc.line)
			}
			if !reflect.DeepEqual(in, Input{}) {
				t.Errorf("an error came with a body: %+v", in)
			}
		})
	}
}

func TestYAMLParseSyntaxErrorLine(t *testing.T) {
	_, err := ParseYAML([]byte("name: x\nnodes:\n  - key: a\n   kind: b\n"))
	var ye *YAMLError
	if !errors.As(err, &ye) || ye.Line == 0 || !strings.HasPrefix(err.Error(), "line ") {
		t.Fatalf("err = %v (%#v), want a YAMLError with a line", err, ye)
	}
}

// yamlTestNormal maps a workflow to the values its document keeps: ids,
// project and timestamps dropped, numbers that are integers as int64.
func yamlTestNormal(w *Workflow) *Workflow {
	out := &Workflow{Name: w.Name, MaxConcurrentRuns: w.MaxConcurrentRuns, Nodes: []Node{}, Edges: []Edge{}}
	for _, n := range w.Nodes {
		n.ID = ""
		n.Config, _ = yamlTestNormalValue(n.Config).(map[string]any)
		out.Nodes = append(out.Nodes, n)
	}
	for _, e := range w.Edges {
		e.ID = ""
		out.Edges = append(out.Edges, e)
	}
	return out
}

func yamlTestNormalValue(v any) any {
	switch v := v.(type) {
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
			return int64(v)
		}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = yamlTestNormalValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = yamlTestNormalValue(e)
		}
		return out
	}
	return v
}

func FuzzParseYAML(f *testing.F) {
	for _, maxRuns := range []*int64{yamlTestPtr(int64(2)), nil} {
		doc, err := ExportYAML(yamlTestSample(maxRuns))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(doc)
	}
	for _, doc := range []string{
		"name: Hello\nnodes:\n  - key: a\n    kind: end\n",
		"version: 1\nname: \"Triage: nightly\"\nmax_concurrent_runs: 3\nnodes:\n  - key: fetch\n    kind: http_request\n    position: {x: 10, y: 2.5}\n    config:\n      url: https://example.com\n      timeout_seconds: 0x1E\n      big: 18446744073709551615\n      when: 2024-01-01\n      note: >\n        folded\n        text\n  - {key: check, kind: gate, ordinal: 7, parent: ~, config: {condition: \"true\"}}\nedges:\n  - source: fetch\n    target: check\n  - {source: check, handle: \"true\", target: fetch}\n",
		"name: x\ncolour: red\n",
		"version: 2\nname: x\n",
		"name: &n x\nnodes: [*n]\n",
		"nodes:\n  - key: fetch\n    config:\n      headers:\n        1: one\n",
		"name: \"a\\0b\"\n",
		"nodes: \"x\"\n",
		"nodes:\n  - key: a\n    config: {x: [1, 2.5, -0.0, 1e300, \"s\", null, true, {}, []]}\n",
		"nodes:\n  - key: a\n    config:\n      s: |+\n        keep\n\n      t: \"\\t\\r\\u2028 x \"\n",
		"name: \"\\t\\n\\n-\"\nedges:\n  - {source: \"a\\n\\tb\", target: \"{x}, y\"}\n",
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		in, err := ParseYAML(doc)
		yamlTestNotPanic(t, err)
		if err != nil {
			var ye *YAMLError
			if !errors.As(err, &ye) {
				t.Fatalf("error %T is not a *YAMLError: %v", err, err)
			}
			return
		}
		w1 := yamlTestWorkflow(in)
		first, err := ExportYAML(w1)
		if err != nil {
			t.Fatalf("export of a parsed document: %v\ninput:\n%q", err, doc)
		}
		in2, err := ParseYAML(first)
		if err != nil {
			t.Fatalf("parse of the export: %v\ninput:\n%q\nexport:\n%s", err, doc, first)
		}
		w2 := yamlTestWorkflow(in2)
		if a, b := yamlTestNormal(w1), yamlTestNormal(w2); !reflect.DeepEqual(a, b) {
			t.Fatalf("the export reads back different values:\n%#v\n%#v\ninput:\n%q\nexport:\n%s", a, b, doc, first)
		}
		second, err := ExportYAML(w2)
		if err != nil {
			t.Fatalf("second export: %v", err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("export is not idempotent:\n%s\n---\n%s\ninput:\n%q", first, second, doc)
		}
	})
}
