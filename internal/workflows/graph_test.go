package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"slipway/internal/platform/apperr"
)

// Builders for graph inputs.

func seqIDs() func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	}
}

func agentNode(key string) NodeInput {
	return NodeInput{Key: key, Kind: "agent", Config: map[string]any{"prompt": "do " + key}}
}

func kindNode(key, kind string, config map[string]any) NodeInput {
	return NodeInput{Key: key, Kind: kind, Config: config}
}

func gateNode(key string) NodeInput {
	return kindNode(key, "gate", map[string]any{"condition": "input.ok"})
}

func loopNode(key string) NodeInput {
	return kindNode(key, "loop", map[string]any{"items": "input.list"})
}

func endNode(key string) NodeInput { return kindNode(key, "end", nil) }

func inFrame(n NodeInput, parent string) NodeInput {
	n.ParentNodeKey = &parent
	return n
}

func edge(src, handle, dst string) EdgeInput {
	return EdgeInput{Source: src, SourceHandle: handle, Target: dst}
}

func ptr[T any](v T) *T { return &v }

func mustBuild(t *testing.T, in Input, prev *Graph, newID func() string) *Graph {
	t.Helper()
	g, err := buildGraph(in, prev, newID)
	if err != nil {
		t.Fatalf("buildGraph: %v", err)
	}
	return g
}

func keysOf(nodes []Node) []string {
	out := []string{}
	for _, n := range nodes {
		out = append(out, n.Key)
	}
	return out
}

func edgeStrings(edges []Edge) []string {
	out := []string{}
	for _, e := range edges {
		out = append(out, e.Source+"."+e.SourceHandle+"->"+e.Target)
	}
	return out
}

// wantBadRequest asserts err is bad_request and its message holds want.
func wantBadRequest(t *testing.T, err error, want string) string {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one containing %q", want)
	}
	if !errors.Is(err, apperr.ErrBadRequest) {
		t.Fatalf("error %v is not bad_request", err)
	}
	e, _ := apperr.As(err)
	if !strings.Contains(e.Message, want) {
		t.Fatalf("message %q does not contain %q", e.Message, want)
	}
	return e.Message
}

func TestValidationTable(t *testing.T) {
	many := make([]NodeInput, 501)
	for i := range many {
		many[i] = kindNode(fmt.Sprintf("n%d", i), "transform", nil)
	}
	manyEdges := make([]EdgeInput, 2001)
	for i := range manyEdges {
		manyEdges[i] = edge("a", "", "b")
	}
	bigIDs := func(ids ...string) []NodeInput {
		out := []NodeInput{}
		for i, id := range ids {
			n := agentNode(fmt.Sprintf("n%d", i))
			n.ID = id
			out = append(out, n)
		}
		return out
	}
	withEdgeID := func(e EdgeInput, id string) EdgeInput { e.ID = id; return e }
	withPos := func(n NodeInput, x, y float64) NodeInput { n.Position = &Position{X: x, Y: y}; return n }
	withOrdinal := func(n NodeInput, o int64) NodeInput { n.Ordinal = &o; return n }
	const uuidA = "11111111-1111-4111-8111-111111111111"

	cases := []struct {
		name  string
		in    Input
		want  string
		exact bool // the message is exactly want
	}{
		// 1. counts
		{name: "no nodes", in: Input{}, want: "a workflow needs at least one node"},
		{name: "too many nodes", in: Input{Nodes: many}, want: "too many nodes: 501 (at most 500)"},
		{name: "too many steps", in: Input{Steps: make([]StepInput, 501)}, want: "too many nodes: 501 (at most 500)"},
		{name: "too many edges", in: Input{Nodes: []NodeInput{agentNode("a"), agentNode("b")}, Edges: manyEdges}, want: "too many edges: 2001 (at most 2000)"},
		// 2. keys
		{name: "empty key", in: Input{Nodes: []NodeInput{agentNode("a"), agentNode("")}}, want: "node at index 1: key is required"},
		{name: "bad key pattern", in: Input{Nodes: []NodeInput{agentNode("1a")}}, want: `node "1a": key must start with a letter`},
		{name: "key with space", in: Input{Nodes: []NodeInput{agentNode("a b")}}, want: `node "a b": key must start with a letter`},
		{name: "control char in key", in: Input{Nodes: []NodeInput{agentNode("a\x00b")}}, want: `node "a\x00b": key must start with a letter`},
		{name: "newline in key", in: Input{Nodes: []NodeInput{agentNode("a\nb")}}, want: `node "a\nb": key must start with a letter`},
		{name: "key too long", in: Input{Nodes: []NodeInput{agentNode(strings.Repeat("k", 65))}}, want: "key is longer than 64 characters"},
		{name: "duplicate key", in: Input{Nodes: []NodeInput{agentNode("a"), agentNode("b"), agentNode("a")}}, want: `node "a": duplicate node key "a" (also the node at index 0)`},
		// 3. kinds
		{name: "unknown kind", in: Input{Nodes: []NodeInput{kindNode("x", "foo", nil)}}, want: `node "x": unknown kind "foo"`, exact: true},
		{name: "empty kind", in: Input{Nodes: []NodeInput{kindNode("x", "", nil)}}, want: `node "x": unknown kind ""`, exact: true},
		// 4. ids
		{name: "bad node id", in: Input{Nodes: bigIDs("not-a-uuid")}, want: `node "n0": id "not-a-uuid" is not a UUID`},
		{name: "duplicate node id", in: Input{Nodes: bigIDs(uuidA, strings.ToUpper(uuidA))}, want: `node "n1": duplicate node id ` + uuidA + ` (also the id of node "n0")`},
		{name: "bad edge id", in: Input{Nodes: []NodeInput{agentNode("a"), agentNode("b")}, Edges: []EdgeInput{withEdgeID(edge("a", "", "b"), "x")}}, want: `edge a -> b: id "x" is not a UUID`},
		{name: "duplicate edge id", in: Input{Nodes: []NodeInput{agentNode("a"), agentNode("b"), agentNode("c")},
			Edges: []EdgeInput{withEdgeID(edge("a", "", "b"), uuidA), withEdgeID(edge("a", "", "c"), uuidA)}}, want: "edge a -> c: duplicate edge id " + uuidA + " (also the id of edge a -> b)"},
		// 5. config
		{name: "gate without condition", in: Input{Nodes: []NodeInput{kindNode("g", "gate", nil)}}, want: `node "g": expected required property condition to be present`},
		{name: "http_request unknown property", in: Input{Nodes: []NodeInput{kindNode("h", "http_request", map[string]any{"url": "https://example.com", "bogus": true})}},
			want: `node "h": unexpected property (config.bogus)`},
		{name: "loop parallelism 0", in: Input{Nodes: []NodeInput{kindNode("l", "loop", map[string]any{"items": "x", "parallelism": 0})}},
			want: `node "l": expected number >= 1 (config.parallelism)`},
		{name: "agent without prompt", in: Input{Nodes: []NodeInput{kindNode("a", "agent", nil)}}, want: `node "a": expected required property prompt`},
		{name: "NUL in config", in: Input{Nodes: []NodeInput{kindNode("a", "agent", map[string]any{"prompt": "x\x00y"})}}, want: `node "a": config must not contain NUL characters`},
		{name: "NUL in config key", in: Input{Nodes: []NodeInput{kindNode("t", "transform", map[string]any{"mapping": map[string]any{"k\x00": "1"}})}}, want: `node "t": config must not contain NUL characters`},
		// 6. expressions and templates compile, and read existing nodes
		{name: "gate condition does not compile", in: Input{Nodes: []NodeInput{kindNode("g", "gate", map[string]any{"condition": "input.n >"})}},
			want: `node "g": config.condition: expression "input.n >"`},
		{name: "transform mapping does not compile", in: Input{Nodes: []NodeInput{kindNode("t", "transform", map[string]any{"mapping": map[string]any{"a": "1", "b": "(("}})}},
			want: `node "t": config.mapping.b: expression "(("`},
		{name: "loop items reads an unknown node", in: Input{Nodes: []NodeInput{kindNode("l", "loop", map[string]any{"items": "nodes.fetch.output"})}},
			want: `node "l": config.items reads nodes.fetch, and the workflow has no node "fetch"`},
		{name: "end output does not compile", in: Input{Nodes: []NodeInput{kindNode("e", "end", map[string]any{"output": "1 +"})}}, want: `node "e": config.output: expression "1 +"`},
		{name: "template never closed", in: Input{Nodes: []NodeInput{kindNode("h", "http_request", map[string]any{"url": "https://x.test/{{ input.id"})}},
			want: `node "h": config.url: template: {{ at`},
		{name: "header template does not compile", in: Input{Nodes: []NodeInput{kindNode("h", "http_request", map[string]any{"url": "https://x.test/", "headers": map[string]any{"X-A": "{{ ) }}"}})}},
			want: `node "h": config.headers.X-A: template: placeholder at`},
		{name: "prompt reads an unknown node", in: Input{Nodes: []NodeInput{kindNode("a", "agent", map[string]any{"prompt": "fix {{ nodes.triage.output }}"})}},
			want: `node "a": config.prompt reads nodes.triage, and the workflow has no node "triage"`},
		{name: "webhook payload does not compile", in: Input{Nodes: []NodeInput{kindNode("w", "notify_webhook", map[string]any{"url": "https://x.test/", "payload": "{'a': }"})}},
			want: `node "w": config.payload: expression`},
		{name: "wait_event name does not compile", in: Input{Nodes: []NodeInput{kindNode("w", "wait_event", map[string]any{"event": "{{ }}"})}}, want: `node "w": config.event: template: placeholder at`},
		{name: "human message reads an unknown node", in: Input{Nodes: []NodeInput{kindNode("h", "human", map[string]any{"message": "ok {{ nodes['x-y'].output }}?"})}},
			want: `node "h": config.message reads nodes.x-y, and the workflow has no node "x-y"`},
		{name: "control char in category", in: Input{Nodes: []NodeInput{kindNode("c", "llm_classify", map[string]any{"prompt": "p", "categories": []any{"ok", "b\x1bad"}})}},
			want: `node "c": output handle "b\x1bad" must not contain control`},
		{name: "category repeats a handle", in: Input{Nodes: []NodeInput{kindNode("c", "llm_classify", map[string]any{"prompt": "p", "categories": []any{"ok", "error"}})}},
			want: `node "c": output handle "error" appears twice`},
		{name: "empty category", in: Input{Nodes: []NodeInput{kindNode("c", "llm_classify", map[string]any{"prompt": "p", "categories": []any{"ok", ""}})}},
			want: `node "c": output handle "" must be 1 to 64 characters`},
		// 6. numbers
		{name: "ordinal too large", in: Input{Nodes: []NodeInput{withOrdinal(agentNode("a"), 1<<53)}}, want: `node "a": ordinal must be within ±9007199254740991`},
		{name: "ordinal too small", in: Input{Nodes: []NodeInput{withOrdinal(agentNode("a"), -(1 << 53))}}, want: `node "a": ordinal must be within`},
		{name: "NaN position", in: Input{Nodes: []NodeInput{withPos(agentNode("a"), math.NaN(), 0)}}, want: `node "a": position.x must be a finite number within ±1000000000`},
		{name: "Inf position", in: Input{Nodes: []NodeInput{withPos(agentNode("a"), 0, math.Inf(-1))}}, want: `node "a": position.y must be a finite number`},
		{name: "position out of range", in: Input{Nodes: []NodeInput{withPos(agentNode("a"), 1e9+1, 0)}}, want: `node "a": position.x must be a finite number`},
		// 7. parents
		{name: "parent unknown", in: Input{Nodes: []NodeInput{inFrame(agentNode("x"), "zz")}}, want: `node "x": unknown parent node "zz"`},
		{name: "parent not a loop", in: Input{Nodes: []NodeInput{gateNode("g"), inFrame(agentNode("x"), "g")}}, want: `node "x": parent node "g" is a gate node, not a loop`},
		{name: "parent is an agent", in: Input{Nodes: []NodeInput{agentNode("a"), inFrame(agentNode("x"), "a")}}, want: `node "x": parent node "a" is an agent node, not a loop`},
		{name: "parent self", in: Input{Nodes: []NodeInput{agentNode("top"), inFrame(loopNode("l"), "l")}}, want: `node "l": parent_node_key names the node itself`},
		{name: "parent cycle between two loops", in: Input{Nodes: []NodeInput{agentNode("top"), inFrame(agentNode("body"), "l2"), inFrame(loopNode("l1"), "l2"), inFrame(loopNode("l2"), "l1")}},
			want: `node "l1": parent_node_key chain is cyclic (l1 -> l2 -> l1)`},
		// 8. edges
		{name: "unknown source", in: Input{Nodes: []NodeInput{agentNode("a")}, Edges: []EdgeInput{edge("zz", "out", "a")}}, want: `edge zz -> a: unknown source node "zz"`},
		{name: "unknown target", in: Input{Nodes: []NodeInput{agentNode("a")}, Edges: []EdgeInput{edge("a", "", "zz")}}, want: `edge a -> zz: unknown target node "zz"`},
		{name: "unknown target with control char", in: Input{Nodes: []NodeInput{agentNode("a")}, Edges: []EdgeInput{edge("a", "", "z\x07")}}, want: `edge a -> "z\a": unknown target node "z\a"`},
		{name: "self loop", in: Input{Nodes: []NodeInput{agentNode("a")}, Edges: []EdgeInput{edge("a", "", "a")}}, want: `edge a -> a: an edge cannot connect a node to itself`},
		{name: "bad handle for gate", in: Input{Nodes: []NodeInput{gateNode("g"), agentNode("a")}, Edges: []EdgeInput{edge("g", "out", "a")}},
			want: `edge g -> a: source_handle "out" is not an output of a gate node (true, false)`},
		{name: "missing handle for gate", in: Input{Nodes: []NodeInput{gateNode("g"), agentNode("a")}, Edges: []EdgeInput{edge("g", "", "a")}},
			want: `edge g -> a: source_handle is required for a gate node (true, false)`},
		{name: "missing handle for wait_event", in: Input{Nodes: []NodeInput{kindNode("w", "wait_event", map[string]any{"event": "go"}), agentNode("a")}, Edges: []EdgeInput{edge("w", "", "a")}},
			want: `edge w -> a: source_handle is required for a wait_event node (event, timeout)`},
		{name: "bad handle for llm_classify", in: Input{Nodes: []NodeInput{kindNode("c", "llm_classify", map[string]any{"prompt": "p", "categories": []any{"spam", "ham"}}), agentNode("a")},
			Edges: []EdgeInput{edge("c", "out", "a")}}, want: `edge c -> a: source_handle "out" is not an output of an llm_classify node (spam, ham, error)`},
		{name: "handle on end", in: Input{Nodes: []NodeInput{agentNode("a"), endNode("done"), agentNode("b")}, Edges: []EdgeInput{edge("a", "", "done"), edge("done", "out", "b")}},
			want: `edge done -> b: end nodes have no outputs`},
		{name: "edge from end without handle", in: Input{Nodes: []NodeInput{endNode("done"), agentNode("b")}, Edges: []EdgeInput{edge("done", "", "b")}},
			want: `edge done -> b: end nodes have no outputs`},
		{name: "duplicate edge", in: Input{Nodes: []NodeInput{agentNode("a"), agentNode("b")}, Edges: []EdgeInput{edge("a", "", "b"), edge("a", "out", "b")}},
			want: `edge a -> b: duplicate edge (same source, source_handle "out" and target)`},
		// 9. frames
		{name: "edge into a frame", in: Input{Nodes: []NodeInput{agentNode("a"), loopNode("l"), inFrame(agentNode("b"), "l")}, Edges: []EdgeInput{edge("a", "", "l"), edge("a", "", "b")}},
			want: `edge a -> b crosses a loop frame boundary ("a" is at the top level, "b" is in loop "l")`},
		{name: "edge out of a frame", in: Input{Nodes: []NodeInput{loopNode("l"), inFrame(agentNode("b"), "l"), agentNode("c")}, Edges: []EdgeInput{edge("l", "", "c"), edge("b", "", "c")}},
			want: `edge b -> c crosses a loop frame boundary`},
		{name: "edge from loop to its body", in: Input{Nodes: []NodeInput{loopNode("l"), inFrame(agentNode("b"), "l")}, Edges: []EdgeInput{edge("l", "", "b")}},
			want: `edge l -> b crosses a loop frame boundary ("l" is at the top level, "b" is in loop "l"; a loop starts its body's entry nodes`},
		{name: "edge between sibling frames", in: Input{Nodes: []NodeInput{loopNode("l1"), loopNode("l2"), inFrame(agentNode("x"), "l1"), inFrame(agentNode("y"), "l2")}, Edges: []EdgeInput{edge("x", "", "y")}},
			want: `edge x -> y crosses a loop frame boundary ("x" is in loop "l1", "y" is in loop "l2")`},
		// 10. cycles
		{name: "cycle", in: Input{Nodes: []NodeInput{agentNode("a"), agentNode("b"), agentNode("c")}, Edges: []EdgeInput{edge("a", "", "b"), edge("b", "", "c"), edge("c", "", "b")}},
			want: `cycle through node "b" (b -> c -> b)`},
		{name: "cycle reached from a later node", in: Input{Nodes: []NodeInput{agentNode("z"), agentNode("a"), agentNode("b"), agentNode("c")},
			Edges: []EdgeInput{edge("a", "", "z"), edge("b", "", "a"), edge("c", "", "b"), edge("b", "error", "c")}},
			want: `cycle through node "b" (b -> c -> b)`},
		{name: "cycle inside a frame", in: Input{Nodes: []NodeInput{loopNode("l"), inFrame(agentNode("s"), "l"), inFrame(agentNode("x"), "l"), inFrame(agentNode("y"), "l")},
			Edges: []EdgeInput{edge("s", "", "x"), edge("x", "", "y"), edge("y", "", "x")}},
			want: `cycle through node "x" (x -> y -> x)`},
		// Steps.
		{name: "both nodes and steps", in: Input{Nodes: []NodeInput{agentNode("a")}, Steps: []StepInput{{StepKey: "s", PromptTemplate: "p"}}}, want: "give nodes or steps, not both"},
		{name: "edges with steps", in: Input{Steps: []StepInput{{StepKey: "s", PromptTemplate: "p"}}, Edges: []EdgeInput{edge("s", "", "s")}}, want: "edges cannot be given with steps"},
		{name: "step of another kind", in: Input{Steps: []StepInput{{StepKey: "s", Kind: "gate", PromptTemplate: "p"}}}, want: `step "s": kind must be agent`},
		{name: "step depends on unknown", in: Input{Steps: []StepInput{{StepKey: "s", PromptTemplate: "p", DependsOn: []string{"zz"}}}}, want: `edge zz -> s: unknown source node "zz"`},
		{name: "step with empty prompt", in: Input{Steps: []StepInput{{StepKey: "s"}}}, want: `node "s": expected length >= 1 (config.prompt)`},
		{name: "step with bad on_failure", in: Input{Steps: []StepInput{{StepKey: "s", PromptTemplate: "p", OnFailure: "sometimes"}}}, want: `node "s": expected value to be one of "fail, continue" (config.on_failure)`},
		{name: "step depends on itself", in: Input{Steps: []StepInput{{StepKey: "s", PromptTemplate: "p", DependsOn: []string{"s"}}}}, want: `edge s -> s: an edge cannot connect a node to itself`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := buildGraph(c.in, nil, seqIDs())
			if g != nil {
				t.Fatalf("got a graph with an error %v", err)
			}
			msg := wantBadRequest(t, err, c.want)
			if c.exact && msg != c.want {
				t.Fatalf("message %q, want exactly %q", msg, c.want)
			}
		})
	}
}

// TestValidationOrder: nodes are checked before edges, edges before the
// graph-wide rules, each in order, and twice gives the same message.
func TestValidationOrder(t *testing.T) {
	in := Input{
		Nodes: []NodeInput{agentNode("a"), agentNode("b"), kindNode("g", "gate", nil), kindNode("x", "foo", nil)},
		Edges: []EdgeInput{edge("a", "", "zz"), edge("b", "", "a"), edge("a", "", "b")},
	}
	wantBadRequest(t, must2(buildGraph(in, nil, seqIDs())), `node "g": expected required property condition`)
	in.Nodes[2] = gateNode("g")
	wantBadRequest(t, must2(buildGraph(in, nil, seqIDs())), `node "x": unknown kind "foo"`)
	in.Nodes[3] = agentNode("x")
	wantBadRequest(t, must2(buildGraph(in, nil, seqIDs())), `edge a -> zz: unknown target node "zz"`)
	in.Edges[0] = edge("a", "", "x")
	wantBadRequest(t, must2(buildGraph(in, nil, seqIDs())), `cycle through node "a" (a -> b -> a)`)

	// Determinism: the same invalid graph answers the same, run after run,
	// whether built or validated again.
	g := &Graph{
		Nodes: []Node{
			{ID: "00000000-0000-4000-8000-000000000001", Key: "a", Kind: "agent", Config: map[string]any{"prompt": "p"}},
			{ID: "00000000-0000-4000-8000-000000000002", Key: "b", Kind: "agent", Config: map[string]any{"prompt": "p"}},
			{ID: "00000000-0000-4000-8000-000000000003", Key: "c", Kind: "agent", Config: map[string]any{"prompt": "p"}},
			{ID: "00000000-0000-4000-8000-000000000004", Key: "d", Kind: "agent", Config: map[string]any{"prompt": "p"}},
		},
		Edges: []Edge{
			{ID: "00000000-0000-4000-8000-000000000011", Source: "d", SourceHandle: "out", Target: "c"},
			{ID: "00000000-0000-4000-8000-000000000012", Source: "c", SourceHandle: "out", Target: "d"},
			{ID: "00000000-0000-4000-8000-000000000013", Source: "b", SourceHandle: "out", Target: "a"},
			{ID: "00000000-0000-4000-8000-000000000014", Source: "a", SourceHandle: "out", Target: "b"},
		},
	}
	first := wantBadRequest(t, g.validate(), `cycle through node "a" (a -> b -> a)`)
	for range 20 {
		if msg := wantBadRequest(t, g.validate(), "cycle"); msg != first {
			t.Fatalf("validate answered %q, then %q", first, msg)
		}
	}
}

func must2(_ *Graph, err error) error { return err }

func TestGraphDiamond(t *testing.T) {
	in := Input{
		Nodes: []NodeInput{agentNode("a"), agentNode("b"), agentNode("c"), agentNode("d")},
		Edges: []EdgeInput{edge("a", "", "b"), edge("a", "", "c"), edge("c", "", "d"), edge("b", "", "d")},
	}
	g := mustBuild(t, in, nil, seqIDs())
	if got := edgeStrings(g.Incoming("d")); !reflect.DeepEqual(got, []string{"c.out->d", "b.out->d"}) {
		t.Fatalf("Incoming(d) = %v", got)
	}
	if got := edgeStrings(g.Outgoing("a")); !reflect.DeepEqual(got, []string{"a.out->b", "a.out->c"}) {
		t.Fatalf("Outgoing(a) = %v", got)
	}
	if got := g.Incoming("a"); len(got) != 0 {
		t.Fatalf("Incoming(a) = %v", got)
	}
	steps := g.Steps()
	if len(steps) != 4 || steps[3].StepKey != "d" || !reflect.DeepEqual(steps[3].DependsOn, []string{"b", "c"}) {
		t.Fatalf("Steps = %+v", steps)
	}
	if steps[0].DependsOn == nil || len(steps[0].DependsOn) != 0 {
		t.Fatalf("an entry's depends_on = %#v, want an empty slice", steps[0].DependsOn)
	}
	if n := g.Node("c"); n == nil || n.Key != "c" || n.Ordinal != 2 {
		t.Fatalf("Node(c) = %+v", n)
	}
	if g.Node("zz") != nil {
		t.Fatal("Node(zz) is not nil")
	}
	// Node points into the graph.
	g.Node("c").Ordinal = 7
	if g.Nodes[2].Ordinal != 7 {
		t.Fatal("Node does not return the graph's node")
	}
}

func TestGraphGateBranches(t *testing.T) {
	in := Input{
		Nodes: []NodeInput{agentNode("start"), gateNode("g"), agentNode("yes"), endNode("no"), agentNode("other")},
		Edges: []EdgeInput{edge("start", "", "g"), edge("g", "true", "yes"), edge("g", "false", "no"), edge("start", "error", "no")},
	}
	g := mustBuild(t, in, nil, seqIDs())
	if got := edgeStrings(g.Outgoing("g")); !reflect.DeepEqual(got, []string{"g.true->yes", "g.false->no"}) {
		t.Fatalf("Outgoing(g) = %v", got)
	}
	// Steps lists only the agent nodes.
	if got := g.Steps(); len(got) != 3 || got[0].StepKey != "start" || got[1].StepKey != "yes" || got[2].StepKey != "other" ||
		!reflect.DeepEqual(got[1].DependsOn, []string{"g"}) {
		t.Fatalf("Steps = %+v", got)
	}
}

func TestGraphLoopFrame(t *testing.T) {
	in := Input{
		Nodes: []NodeInput{
			agentNode("before"),
			loopNode("each"),
			inFrame(withOrd(agentNode("second"), 5), "each"),
			inFrame(withOrd(kindNode("first", "transform", nil), 1), "each"),
			inFrame(withOrd(endNode("stop"), 5), "each"),
			agentNode("after"),
		},
		Edges: []EdgeInput{edge("before", "", "each"), edge("each", "", "after"), edge("first", "", "second"), edge("first", "error", "stop")},
	}
	g := mustBuild(t, in, nil, seqIDs())
	if got := keysOf(g.FrameNodes("each")); !reflect.DeepEqual(got, []string{"first", "second", "stop"}) {
		t.Fatalf("FrameNodes(each) = %v (want ordinal then key order)", got)
	}
	if got := keysOf(g.FrameNodes("")); !reflect.DeepEqual(got, []string{"before", "each", "after"}) {
		t.Fatalf("FrameNodes() = %v", got)
	}
	if frameOf(g, "second") != "each" || frameOf(g, "each") != "" || frameOf(g, "zz") != "" {
		t.Fatalf("frameOf: %q %q", frameOf(g, "second"), frameOf(g, "each"))
	}
	// A loop with an empty body is fine.
	mustBuild(t, Input{Nodes: []NodeInput{loopNode("l")}}, nil, seqIDs())
}

func withOrd(n NodeInput, o int64) NodeInput { n.Ordinal = &o; return n }

func TestGraphNestedLoops(t *testing.T) {
	in := Input{
		Nodes: []NodeInput{
			loopNode("outer"),
			inFrame(loopNode("inner"), "outer"),
			inFrame(agentNode("prep"), "outer"),
			inFrame(agentNode("leaf"), "inner"),
			inFrame(agentNode("leaf2"), "inner"),
			agentNode("done"),
		},
		Edges: []EdgeInput{edge("prep", "", "inner"), edge("leaf", "", "leaf2"), edge("outer", "", "done")},
	}
	g := mustBuild(t, in, nil, seqIDs())
	if frameOf(g, "leaf") != "inner" || frameOf(g, "inner") != "outer" || frameOf(g, "outer") != "" {
		t.Fatal("frames of nested loops are wrong")
	}
	if got := keysOf(g.FrameNodes("outer")); !reflect.DeepEqual(got, []string{"inner", "prep"}) {
		t.Fatalf("FrameNodes(outer) = %v", got)
	}
	// An edge from the outer frame into the inner one crosses a boundary.
	in.Edges = append(in.Edges, edge("prep", "", "leaf"))
	wantBadRequest(t, must2(buildGraph(in, nil, seqIDs())), `edge prep -> leaf crosses a loop frame boundary ("prep" is in loop "outer", "leaf" is in loop "inner")`)
}

func TestGraphDefaults(t *testing.T) {
	empty := ""
	n := agentNode("a")
	n.ParentNodeKey = &empty
	in := Input{
		Nodes: []NodeInput{n, kindNode("t", "transform", nil), kindNode("w", "wait_event", map[string]any{"event": "e"}), endNode("z")},
		Edges: []EdgeInput{edge("a", "", "t"), edge("t", "", "w"), edge("w", "timeout", "z")},
	}
	g := mustBuild(t, in, nil, seqIDs())
	for i, n := range g.Nodes {
		if n.Ordinal != int64(i) || n.Config == nil || n.Position != (Position{}) || n.ParentNodeKey != nil {
			t.Fatalf("node %d = %+v", i, n)
		}
	}
	if got := edgeStrings(g.Edges); !reflect.DeepEqual(got, []string{"a.out->t", "t.out->w", "w.timeout->z"}) {
		t.Fatalf("edges = %v (default handles not filled)", got)
	}
	// The config is a copy: the caller's map is not the graph's.
	in.Nodes[0].Config["prompt"] = "changed"
	if g.Nodes[0].Config["prompt"] != "do a" {
		t.Fatal("the graph shares the input's config map")
	}
	// Exactly {"nodes":[...],"edges":[...]} with config {} and parent null.
	raw, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || len(top) != 2 || top["nodes"] == nil || top["edges"] == nil {
		t.Fatalf("graph JSON = %s", raw)
	}
	if !strings.Contains(string(raw), `"key":"t","kind":"transform","ordinal":1,"config":{},"position":{"x":0,"y":0},"parent_node_key":null`) {
		t.Fatalf("graph JSON = %s", raw)
	}
	var back Graph
	if err := json.Unmarshal(raw, &back); err != nil || back.validate() != nil || !reflect.DeepEqual(edgeStrings(back.Edges), edgeStrings(g.Edges)) {
		t.Fatalf("round trip: %v %v", err, back.validate())
	}
	// Given ordinals, positions and ids are kept; ids are canonical.
	n = agentNode("a")
	n.ID = "{AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA}"
	n.Ordinal, n.Position = ptr(int64(-3)), &Position{X: 1.5, Y: -2}
	g = mustBuild(t, Input{Nodes: []NodeInput{n}}, nil, seqIDs())
	if got := g.Nodes[0]; got.ID != "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa" || got.Ordinal != -3 || got.Position != (Position{1.5, -2}) {
		t.Fatalf("node = %+v", got)
	}
}

func TestGraphKeepsIDs(t *testing.T) {
	in := Input{
		Nodes: []NodeInput{agentNode("a"), gateNode("g"), agentNode("b"), agentNode("c")},
		Edges: []EdgeInput{edge("a", "", "g"), edge("g", "true", "b"), edge("g", "false", "c")},
	}
	prev := mustBuild(t, in, nil, seqIDs())
	ids := map[string]string{}
	for _, n := range prev.Nodes {
		ids[n.Key] = n.ID
	}
	eids := map[string]string{}
	for i, s := range edgeStrings(prev.Edges) {
		eids[s] = prev.Edges[i].ID
	}

	// A replace: nodes reordered, a node added, a branch swapped.
	minted := 0
	newID := func() string { minted++; return fmt.Sprintf("99999999-0000-4000-8000-%012d", minted) }
	in2 := Input{
		Nodes: []NodeInput{agentNode("c"), agentNode("new"), agentNode("a"), gateNode("g"), agentNode("b")},
		Edges: []EdgeInput{edge("g", "false", "b"), edge("a", "out", "g"), edge("g", "true", "c"), edge("c", "", "new")},
	}
	g := mustBuild(t, in2, prev, newID)
	for _, n := range g.Nodes {
		want, ok := ids[n.Key]
		if !ok {
			want = "99999999-0000-4000-8000-000000000001"
		}
		if n.ID != want {
			t.Fatalf("node %s id %s, want %s", n.Key, n.ID, want)
		}
	}
	// Only a.out->g keeps its id: the others connect differently now.
	for i, s := range edgeStrings(g.Edges) {
		if old, ok := eids[s]; ok != (s == "a.out->g") || (ok && g.Edges[i].ID != old) {
			t.Fatalf("edge %s id %s (previous ids %v)", s, g.Edges[i].ID, eids)
		}
	}
	if minted != 4 { // node new, three new edges
		t.Fatalf("minted %d ids, want 4", minted)
	}

	// An id given explicitly to another node is not kept twice.
	in3 := Input{Nodes: []NodeInput{agentNode("a"), agentNode("b")}}
	in3.Nodes[1].ID = ids["a"]
	g = mustBuild(t, in3, prev, newID)
	if g.Nodes[1].ID != ids["a"] || g.Nodes[0].ID == ids["a"] || g.Nodes[0].ID == "" {
		t.Fatalf("ids = %s %s", g.Nodes[0].ID, g.Nodes[1].ID)
	}
	// Same for edges.
	in4 := Input{Nodes: []NodeInput{agentNode("a"), gateNode("g"), agentNode("x")},
		Edges: []EdgeInput{edge("a", "", "g"), {ID: eids["a.out->g"], Source: "g", SourceHandle: "true", Target: "x"}}}
	g = mustBuild(t, in4, prev, newID)
	if g.Edges[1].ID != eids["a.out->g"] || g.Edges[0].ID == eids["a.out->g"] {
		t.Fatalf("edge ids = %s %s", g.Edges[0].ID, g.Edges[1].ID)
	}
}

func TestStepsConversion(t *testing.T) {
	steps := []StepInput{
		{ID: "00000000-0000-4000-8000-0000000000aa", StepKey: "build", PromptTemplate: "make", AgentType: "shell", Ordinal: ptr(int64(10))},
		{StepKey: "test", PromptTemplate: "make test", OnFailure: "continue", DependsOn: []string{"build"}},
		{StepKey: "lint", PromptTemplate: "make lint", DependsOn: []string{"build", "build"}},
		{StepKey: "ship", Kind: "agent", PromptTemplate: "deploy", AgentType: "llm", OnFailure: "fail", DependsOn: []string{"test", "lint"}},
	}
	g := mustBuild(t, Input{Steps: steps}, nil, seqIDs())
	if got := edgeStrings(g.Edges); !reflect.DeepEqual(got, []string{"build.out->test", "build.out->lint", "test.out->ship", "lint.out->ship"}) {
		t.Fatalf("edges = %v", got)
	}
	if c := g.Node("build").Config; !reflect.DeepEqual(c, map[string]any{"prompt": "make", "agent_type": "shell"}) {
		t.Fatalf("build config = %v", c)
	}
	if c := g.Node("test").Config; !reflect.DeepEqual(c, map[string]any{"prompt": "make test", "on_failure": "continue"}) {
		t.Fatalf("test config = %v", c)
	}
	want := []Step{
		{ID: g.Node("test").ID, StepKey: "test", Kind: "agent", PromptTemplate: "make test", OnFailure: "continue", Ordinal: 1, DependsOn: []string{"build"}},
		{ID: g.Node("lint").ID, StepKey: "lint", Kind: "agent", PromptTemplate: "make lint", Ordinal: 2, DependsOn: []string{"build"}},
		{ID: g.Node("ship").ID, StepKey: "ship", Kind: "agent", AgentType: "llm", PromptTemplate: "deploy", OnFailure: "fail", Ordinal: 3, DependsOn: []string{"lint", "test"}},
		{ID: "00000000-0000-4000-8000-0000000000aa", StepKey: "build", Kind: "agent", AgentType: "shell", PromptTemplate: "make", Ordinal: 10, DependsOn: []string{}},
	}
	if got := g.Steps(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Steps =\n%+v\nwant\n%+v", got, want)
	}
	// Steps() fed back as steps gives the same graph and the same steps.
	var back []StepInput
	for _, s := range g.Steps() {
		back = append(back, StepInput{ID: s.ID, StepKey: s.StepKey, Kind: s.Kind, AgentType: s.AgentType, PromptTemplate: s.PromptTemplate,
			OnFailure: s.OnFailure, Ordinal: ptr(s.Ordinal), DependsOn: s.DependsOn})
	}
	g2 := mustBuild(t, Input{Steps: back}, g, seqIDs())
	if got := g2.Steps(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Steps after a round trip =\n%+v\nwant\n%+v", got, want)
	}
	for _, e := range g2.Edges {
		if e.ID != g.Edges[indexOfEdge(g.Edges, e)].ID {
			t.Fatalf("edge %+v did not keep its id", e)
		}
	}
	// Ties in ordinal sort by key.
	g3 := mustBuild(t, Input{Steps: []StepInput{{StepKey: "zeta", PromptTemplate: "p", Ordinal: ptr(int64(0))}, {StepKey: "alpha", PromptTemplate: "p", Ordinal: ptr(int64(0))}}}, nil, seqIDs())
	if got := g3.Steps(); got[0].StepKey != "alpha" || got[1].StepKey != "zeta" {
		t.Fatalf("Steps = %+v", got)
	}
}

func indexOfEdge(edges []Edge, e Edge) int {
	for i, x := range edges {
		if x.Source == e.Source && x.SourceHandle == e.SourceHandle && x.Target == e.Target {
			return i
		}
	}
	return -1
}

// TestGraphReachabilityDefensive: no graph that passes the earlier rules
// fails reachability (see checkReachable), so the check is exercised on
// graphs that skip them.
func TestGraphReachabilityDefensive(t *testing.T) {
	node := func(key, kind, parent string) Node {
		n := Node{Key: key, Kind: kind, Config: map[string]any{}}
		if parent != "" {
			n.ParentNodeKey = &parent
		}
		return n
	}
	e := func(s, d string) Edge { return Edge{Source: s, SourceHandle: "out", Target: d} }
	cases := []struct {
		name string
		g    Graph
		want string
	}{
		{"no top-level entry", Graph{Nodes: []Node{node("a", "agent", ""), node("b", "agent", "")}, Edges: []Edge{e("a", "b"), e("b", "a")}},
			"the workflow has no entry node"},
		{"loop body without entry", Graph{Nodes: []Node{node("l", "loop", ""), node("x", "agent", "l"), node("y", "agent", "l")}, Edges: []Edge{e("x", "y"), e("y", "x")}},
			`node "l": the loop's body has no entry node`},
		{"unreachable cycle", Graph{Nodes: []Node{node("s", "agent", ""), node("x", "agent", ""), node("y", "agent", "")}, Edges: []Edge{e("x", "y"), e("y", "x")}},
			`node "x": unreachable`},
		{"frame of an unreachable loop", Graph{Nodes: []Node{node("s", "agent", ""), node("l", "loop", ""), node("x", "agent", ""), node("b", "agent", "l")},
			Edges: []Edge{e("x", "l"), e("l", "x")}}, `node "l": unreachable`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantBadRequest(t, c.g.checkReachable(c.g.keyIndex()), c.want)
		})
	}
	ok := Graph{Nodes: []Node{node("s", "agent", ""), node("l", "loop", ""), node("b", "agent", "l"), node("c", "agent", "l")}, Edges: []Edge{e("s", "l"), e("b", "c")}}
	if err := ok.checkReachable(ok.keyIndex()); err != nil {
		t.Fatalf("a reachable graph: %v", err)
	}
}

// TestGraphValidateStored: validate also guards graphs that did not come
// through buildGraph (a stored or hand-built graph).
func TestGraphValidateStored(t *testing.T) {
	g := mustBuild(t, Input{Nodes: []NodeInput{agentNode("a")}}, nil, seqIDs())
	g.Nodes[0].Config = nil
	wantBadRequest(t, g.validate(), `node "a": config must be an object`)
	g.Nodes[0].Config = map[string]any{"prompt": "p"}
	g.Nodes[0].ID = ""
	wantBadRequest(t, g.validate(), `node "a": id "" is not a UUID`)
	if err := (&Graph{}).validate(); err == nil || !errors.Is(err, apperr.ErrBadRequest) {
		t.Fatalf("an empty graph: %v", err)
	}
}

func frameOf(g *Graph, key string) string {
	if n := g.Node(key); n != nil {
		return n.frame()
	}
	return ""
}
