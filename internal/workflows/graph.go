package workflows

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
)

// Limits of a graph.
const (
	graphMaxNodes     = 500
	graphMaxEdges     = 2000
	graphMaxKeyLen    = 64
	graphMaxHandleLen = 64
	graphMaxOrdinal   = 1<<53 - 1 // 9007199254740991: integers stay exact in JSON numbers
	graphMaxCoord     = 1e9
)

// graphKeyPattern is what a node key looks like: it is used in edges,
// parent_node_key, expressions (nodes.<key>.output) and frame names.
var graphKeyPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// Graph is a workflow's nodes and edges as stored (JSON column) and shown.
//
// Its lookups scan the slices: a graph holds at most 500 nodes and 2000
// edges, and a Graph is often built on the fly around a workflow's slices,
// so a cached index would rarely pay for itself (and would need locking
// once a graph is shared).
type Graph struct {
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges"`
}

// edgeTriple identifies an edge by what it connects.
type edgeTriple struct{ source, handle, target string }

// buildGraph turns a create or replace body into a validated graph. prev is
// the workflow's current graph on a replace (nil on create): a node without
// an id keeps the id of prev's node with the same key, and an edge without
// an id keeps the id of prev's edge with the same (source, source_handle,
// target); otherwise ids are minted with newID. An id kept from prev that
// the body gives explicitly to another node (or edge) is not kept twice: the
// node without an id gets a new one.
//
// Defaults: ordinal = the node's index in the input; config = {} (never
// nil); position = {0,0}; parent_node_key "" = null; an edge's
// source_handle = the source kind's default handle. Where the kind has no
// default the handle stays empty and validate refuses the edge naming the
// valid handles, so problems are still reported in validate's order.
//
// When in.Nodes is empty and in.Steps is not, the steps (the older shape)
// become agent nodes: key = step_key, config = {prompt, agent_type,
// on_failure} (the last two when set), ordinal = the step's or its index,
// and each depends_on entry d becomes an edge d -> step_key on out (repeated
// entries count once). Nodes and steps together, or edges with steps, are
// refused.
// Validate checks a workflow's input the way a create does, short of the
// database (its project and its node types): for importers and their
// fuzzers.
func Validate(in Input) error {
	name, err := cleanName(in.Name)
	if err != nil {
		return err
	}
	if err := checkCap(in.MaxConcurrentRuns); err != nil {
		return err
	}
	g, err := buildGraph(in, nil, ids.New)
	if err != nil {
		return err
	}
	w := &Workflow{Name: name, MaxConcurrentRuns: in.MaxConcurrentRuns}
	w.setGraph(g)
	return checkExportable(w)
}

func buildGraph(in Input, prev *Graph, newID func() string) (*Graph, error) {
	switch {
	case len(in.Nodes) > 0 && len(in.Steps) > 0:
		return nil, apperr.BadRequest("give nodes or steps, not both")
	case len(in.Steps) > 0 && len(in.Edges) > 0:
		return nil, apperr.BadRequest("edges cannot be given with steps: steps are chained by their depends_on (give nodes and edges instead)")
	case len(in.Nodes) > graphMaxNodes || len(in.Steps) > graphMaxNodes:
		return nil, graphTooManyNodes(max(len(in.Nodes), len(in.Steps)))
	case len(in.Edges) > graphMaxEdges:
		return nil, graphTooManyEdges(len(in.Edges))
	}
	nodes, edges := in.Nodes, in.Edges
	if len(nodes) == 0 && len(in.Steps) > 0 {
		var err error
		if nodes, edges, err = stepsToGraph(in.Steps); err != nil {
			return nil, err
		}
	}

	g := &Graph{Nodes: make([]Node, 0, len(nodes)), Edges: make([]Edge, 0, len(edges))}

	// Nodes.
	prevNodeIDs := map[string]string{}
	prevEdgeIDs := map[edgeTriple]string{}
	if prev != nil {
		for _, n := range prev.Nodes {
			if _, ok := prevNodeIDs[n.Key]; !ok && n.ID != "" {
				prevNodeIDs[n.Key] = n.ID
			}
		}
		for _, e := range prev.Edges {
			t := edgeTriple{e.Source, e.SourceHandle, e.Target}
			if _, ok := prevEdgeIDs[t]; !ok && e.ID != "" {
				prevEdgeIDs[t] = e.ID
			}
		}
	}
	given := map[string]bool{}
	for _, n := range nodes {
		if n.ID != "" {
			given[graphCanonicalID(n.ID)] = true
		}
	}
	kept := map[string]bool{}
	for i, n := range nodes {
		id := graphCanonicalID(n.ID)
		if id == "" {
			if pid, ok := prevNodeIDs[n.Key]; ok && !given[pid] && !kept[pid] {
				id = pid
				kept[pid] = true
			} else {
				id = newID()
			}
		}
		ordinal := int64(i)
		if n.Ordinal != nil {
			ordinal = *n.Ordinal
		}
		config := maps.Clone(n.Config)
		if config == nil {
			config = map[string]any{}
		}
		var pos Position
		if n.Position != nil {
			pos = *n.Position
		}
		var parent *string
		if n.ParentNodeKey != nil && *n.ParentNodeKey != "" {
			p := *n.ParentNodeKey
			parent = &p
		}
		g.Nodes = append(g.Nodes, Node{ID: id, Key: n.Key, Kind: n.Kind, Ordinal: ordinal, Config: config, Position: pos, ParentNodeKey: parent})
	}

	// Edges.
	kinds := make(map[string]*Kind, len(g.Nodes))
	for _, n := range g.Nodes {
		if _, ok := kinds[n.Key]; !ok {
			kinds[n.Key] = KindOf(n.Kind)
		}
	}
	given = map[string]bool{}
	for _, e := range edges {
		if e.ID != "" {
			given[graphCanonicalID(e.ID)] = true
		}
	}
	kept = map[string]bool{}
	for _, e := range edges {
		handle := e.SourceHandle
		if k := kinds[e.Source]; handle == "" && k != nil {
			handle = k.DefaultHandle()
		}
		id := graphCanonicalID(e.ID)
		if id == "" {
			if pid, ok := prevEdgeIDs[edgeTriple{e.Source, handle, e.Target}]; ok && !given[pid] && !kept[pid] {
				id = pid
				kept[pid] = true
			} else {
				id = newID()
			}
		}
		g.Edges = append(g.Edges, Edge{ID: id, Source: e.Source, SourceHandle: handle, Target: e.Target})
	}

	if err := g.validate(); err != nil {
		return nil, err
	}
	return g, nil
}

// stepsToGraph turns the older step shape into agent nodes and out edges.
func stepsToGraph(steps []StepInput) ([]NodeInput, []EdgeInput, error) {
	nodes := make([]NodeInput, 0, len(steps))
	var edges []EdgeInput
	for i, s := range steps {
		if s.Kind != "" && s.Kind != "agent" {
			return nil, nil, apperr.BadRequest("step %s: kind must be agent (only agent steps exist in the step shape; give nodes for other kinds)", graphQuote(s.StepKey))
		}
		config := map[string]any{"prompt": s.PromptTemplate}
		if s.AgentType != "" {
			config["agent_type"] = s.AgentType
		}
		if s.OnFailure != "" {
			config["on_failure"] = s.OnFailure
		}
		ordinal := int64(i)
		if s.Ordinal != nil {
			ordinal = *s.Ordinal
		}
		nodes = append(nodes, NodeInput{ID: s.ID, Key: s.StepKey, Kind: "agent", Ordinal: &ordinal, Config: config})
		seen := map[string]bool{}
		for _, d := range s.DependsOn {
			if seen[d] {
				continue
			}
			seen[d] = true
			edges = append(edges, EdgeInput{Source: d, SourceHandle: HandleOut, Target: s.StepKey})
		}
	}
	return nodes, edges, nil
}

// graphCanonicalID is a UUID in its canonical form, or id unchanged when it
// is not one (validate refuses it).
func graphCanonicalID(id string) string {
	if u, err := uuid.Parse(id); err == nil {
		return u.String()
	}
	return id
}

func graphTooManyNodes(n int) error {
	return apperr.BadRequest("too many nodes: %d (at most %d)", n, graphMaxNodes)
}

func graphTooManyEdges(n int) error {
	return apperr.BadRequest("too many edges: %d (at most %d)", n, graphMaxEdges)
}

// validate checks the graph and returns the first problem as bad_request,
// naming the node ("node \"x\": ...") or edge ("edge a -> b: ..."). It is
// deterministic: the counts, then each node in order, then each edge in
// order, then the graph-wide rules (acyclic, reachable).
func (g *Graph) validate() error {
	switch {
	case len(g.Nodes) == 0:
		return apperr.BadRequest("a workflow needs at least one node")
	case len(g.Nodes) > graphMaxNodes:
		return graphTooManyNodes(len(g.Nodes))
	case len(g.Edges) > graphMaxEdges:
		return graphTooManyEdges(len(g.Edges))
	}
	byKey := g.keyIndex()
	ids := map[string]int{}
	for i := range g.Nodes {
		if err := g.checkNode(i, byKey, ids); err != nil {
			return err
		}
	}
	ids = map[string]int{}
	triples := map[edgeTriple]bool{}
	for i := range g.Edges {
		if err := g.checkEdge(i, byKey, ids, triples); err != nil {
			return err
		}
	}
	if err := g.checkAcyclic(byKey); err != nil {
		return err
	}
	return g.checkReachable(byKey)
}

// keyIndex maps each key to the index of its first node.
func (g *Graph) keyIndex() map[string]int {
	byKey := make(map[string]int, len(g.Nodes))
	for i, n := range g.Nodes {
		if _, ok := byKey[n.Key]; !ok {
			byKey[n.Key] = i
		}
	}
	return byKey
}

// checkNode checks one node: key, id, kind, config, handles, numbers and
// parent. ids maps the canonical ids seen so far to their node's index.
func (g *Graph) checkNode(i int, byKey map[string]int, ids map[string]int) error {
	n := &g.Nodes[i]
	name := graphNodeName(i, n.Key)
	bad := func(format string, args ...any) error {
		return apperr.BadRequest("%s: %s", name, fmt.Sprintf(format, args...))
	}

	// Key (the pattern also keeps control characters out).
	switch {
	case n.Key == "":
		return bad("key is required")
	case utf8.RuneCountInString(n.Key) > graphMaxKeyLen:
		return bad("key is longer than %d characters", graphMaxKeyLen)
	case !graphKeyPattern.MatchString(n.Key):
		return bad("key must start with a letter and hold only letters, digits, _ and -")
	case byKey[n.Key] != i:
		return bad("duplicate node key %s (also the node at index %d)", graphQuote(n.Key), byKey[n.Key])
	}

	// Id.
	u, err := uuid.Parse(n.ID)
	if err != nil {
		return bad("id %s is not a UUID", graphQuote(n.ID))
	}
	if j, ok := ids[u.String()]; ok {
		return bad("duplicate node id %s (also the id of node %s)", u, graphQuote(g.Nodes[j].Key))
	}
	ids[u.String()] = i

	// Kind and config.
	kind := KindOf(n.Kind)
	if kind == nil {
		return bad("unknown kind %s", graphQuote(n.Kind))
	}
	if n.Config == nil {
		return bad("config must be an object")
	}
	if err := kind.checkConfig(n.Config); err != nil {
		return bad("%s", err.Error())
	}
	if graphHasNUL(n.Config) {
		return bad("config must not contain NUL characters")
	}
	if err := kind.checkExpressions(n.Config, func(key string) bool { _, ok := byKey[key]; return ok }); err != nil {
		return bad("%s", err.Error())
	}
	if n.Kind == "code" {
		c, _ := decodeConfig[CodeConfig](n.Config) // the schema check passed
		given := 0
		for _, v := range []string{c.Source, c.ScriptID, c.NodeType} {
			if v != "" {
				given++
			}
		}
		switch {
		case given != 1:
			return bad("config: give one of source, script_id and node_type")
		case c.Params != nil && c.NodeType == "":
			return bad("config.params go with a node_type")
		}
	}
	// Output handles come from the kind, or from the config for
	// llm_classify: they must be usable as an edge's source_handle.
	handles := kind.HandlesFor(n.Config)
	for j, h := range handles {
		switch {
		case h == "" || utf8.RuneCountInString(h) > graphMaxHandleLen:
			return bad("output handle %s must be 1 to %d characters", graphQuote(h), graphMaxHandleLen)
		case text.StripControls(h) != h:
			return bad("output handle %s must not contain control or bidirectional-override characters", graphQuote(h))
		case slices.Contains(handles[:j], h):
			return bad("output handle %s appears twice", graphQuote(h))
		}
	}

	// Numbers.
	if n.Ordinal > graphMaxOrdinal || n.Ordinal < -graphMaxOrdinal {
		return bad("ordinal must be within ±%d", int64(graphMaxOrdinal))
	}
	for _, c := range []struct {
		axis string
		v    float64
	}{{"x", n.Position.X}, {"y", n.Position.Y}} {
		if math.IsNaN(c.v) || math.IsInf(c.v, 0) || math.Abs(c.v) > graphMaxCoord {
			return bad("position.%s must be a finite number within ±%.0f", c.axis, graphMaxCoord)
		}
	}

	// Frame.
	if n.ParentNodeKey == nil || *n.ParentNodeKey == "" {
		return nil
	}
	p := *n.ParentNodeKey
	j, ok := byKey[p]
	switch {
	case p == n.Key:
		return bad("parent_node_key names the node itself")
	case !ok:
		return bad("unknown parent node %s", graphQuote(p))
	case g.Nodes[j].Kind != "loop":
		return bad("parent node %s is %s node, not a loop", graphQuote(p), graphKindArticle(g.Nodes[j].Kind))
	}
	// Frames nest, but the chain of parents must end at the top level.
	// Only a node on a cycle reports it, so the first such node in order
	// does.
	path := []string{n.Key}
	seen := map[string]bool{n.Key: true}
	for cur := p; cur != ""; {
		path = append(path, cur)
		if cur == n.Key {
			return bad("parent_node_key chain is cyclic (%s)", strings.Join(path, " -> "))
		}
		if seen[cur] {
			break // a cycle this node is not on
		}
		seen[cur] = true
		k, ok := byKey[cur]
		if !ok || g.Nodes[k].ParentNodeKey == nil {
			break
		}
		cur = *g.Nodes[k].ParentNodeKey
	}
	return nil
}

// checkEdge checks one edge: id, endpoints, handle, duplicates and frames.
// ids maps the canonical edge ids seen so far to their edge's index and
// triples holds the (source, handle, target) seen so far.
func (g *Graph) checkEdge(i int, byKey map[string]int, ids map[string]int, triples map[edgeTriple]bool) error {
	e := &g.Edges[i]
	name := graphEdgeName(e)
	bad := func(format string, args ...any) error {
		return apperr.BadRequest("%s: %s", name, fmt.Sprintf(format, args...))
	}

	u, err := uuid.Parse(e.ID)
	if err != nil {
		return bad("id %s is not a UUID", graphQuote(e.ID))
	}
	if j, ok := ids[u.String()]; ok {
		return bad("duplicate edge id %s (also the id of %s)", u, graphEdgeName(&g.Edges[j]))
	}
	ids[u.String()] = i

	si, ok := byKey[e.Source]
	if !ok {
		return bad("unknown source node %s", graphQuote(e.Source))
	}
	ti, ok := byKey[e.Target]
	if !ok {
		return bad("unknown target node %s", graphQuote(e.Target))
	}
	if e.Source == e.Target {
		return bad("an edge cannot connect a node to itself")
	}

	src, dst := &g.Nodes[si], &g.Nodes[ti]
	handles := KindOf(src.Kind).HandlesFor(src.Config)
	switch {
	case len(handles) == 0:
		return bad("end nodes have no outputs")
	case e.SourceHandle == "":
		return bad("source_handle is required for %s node (%s)", graphKindArticle(src.Kind), strings.Join(handles, ", "))
	case !slices.Contains(handles, e.SourceHandle):
		return bad("source_handle %s is not an output of %s node (%s)", graphQuote(e.SourceHandle), graphKindArticle(src.Kind), strings.Join(handles, ", "))
	}

	t := edgeTriple{e.Source, e.SourceHandle, e.Target}
	if triples[t] {
		return bad("duplicate edge (same source, source_handle %s and target)", graphQuote(e.SourceHandle))
	}
	triples[t] = true

	if sf, tf := src.frame(), dst.frame(); sf != tf {
		hint := ""
		if tf == src.Key {
			hint = "; a loop starts its body's entry nodes (those without incoming edges) itself"
		}
		return apperr.BadRequest("%s crosses a loop frame boundary (%s is %s, %s is %s%s)",
			name, graphQuote(e.Source), graphFrameName(sf), graphQuote(e.Target), graphFrameName(tf), hint)
	}
	return nil
}

// checkAcyclic refuses a cycle of edges (Kahn's algorithm), naming a node
// on one: walking back from the first node in order that was left over, by
// the first incoming edge from a left-over node, must come round to a node
// on a cycle.
func (g *Graph) checkAcyclic(byKey map[string]int) error {
	n := len(g.Nodes)
	indeg := make([]int, n)
	out := make([][]int, n)
	in := make([][]int, n)
	for _, e := range g.Edges {
		s, t := byKey[e.Source], byKey[e.Target]
		indeg[t]++
		out[s] = append(out[s], t)
		in[t] = append(in[t], s)
	}
	queue := make([]int, 0, n)
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	done := make([]bool, n)
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		done[u] = true
		for _, v := range out[u] {
			if indeg[v]--; indeg[v] == 0 {
				queue = append(queue, v)
			}
		}
	}
	start := slices.Index(done, false)
	if start < 0 {
		return nil
	}
	// Every left-over node has an incoming edge from a left-over node.
	visited := map[int]int{} // node -> position in walk
	var walk []int
	for cur := start; ; {
		if at, ok := visited[cur]; ok {
			// walk[at:] runs backwards from cur: cur, a predecessor of
			// cur, ..., a successor of cur. Forwards: cur -> ... -> cur.
			cycle := walk[at:]
			keys := []string{g.Nodes[cur].Key}
			for k := len(cycle) - 1; k >= 0; k-- {
				keys = append(keys, g.Nodes[cycle[k]].Key)
			}
			return apperr.BadRequest("cycle through node %s (%s)", graphQuote(g.Nodes[cur].Key), strings.Join(keys, " -> "))
		}
		visited[cur] = len(walk)
		walk = append(walk, cur)
		next := -1
		for _, s := range in[cur] {
			if !done[s] {
				next = s
				break
			}
		}
		if next < 0 { // cannot happen: left-over nodes keep an incoming edge
			return apperr.BadRequest("cycle through node %s", graphQuote(g.Nodes[cur].Key))
		}
		cur = next
	}
}

// checkReachable checks that every node can run: entry nodes of a frame are
// its nodes without incoming edges; the top level's entries start with the
// run, a loop's entries start with each iteration of a loop that is
// reached, and an edge from a reached node reaches its target.
//
// This is a defensive check: once the earlier rules hold it cannot fail.
// Parent chains end at the top level (so a top-level node exists), edges
// stay within a frame, and a frame's nodes are acyclic, so every non-empty
// frame has an entry and every node is reached from its frame's entries;
// by induction on nesting, every loop's frame is reached through its loop
// node. It stays in case a rule above is ever loosened.
func (g *Graph) checkReachable(byKey map[string]int) error {
	hasIn := make([]bool, len(g.Nodes))
	for _, e := range g.Edges {
		if t, ok := byKey[e.Target]; ok {
			hasIn[t] = true
		}
	}
	entries := map[string][]int{} // frame -> entry nodes, in node order
	members := map[string]int{}
	for i := range g.Nodes {
		f := g.Nodes[i].frame()
		members[f]++
		if !hasIn[i] {
			entries[f] = append(entries[f], i)
		}
	}
	if len(entries[""]) == 0 {
		return apperr.BadRequest("the workflow has no entry node: every top-level node has an incoming edge")
	}
	for i := range g.Nodes {
		if n := &g.Nodes[i]; n.Kind == "loop" && members[n.Key] > 0 && len(entries[n.Key]) == 0 {
			return apperr.BadRequest("%s: the loop's body has no entry node: every node in it has an incoming edge", graphNodeName(i, n.Key))
		}
	}
	out := make([][]int, len(g.Nodes))
	for _, e := range g.Edges {
		s, ok1 := byKey[e.Source]
		t, ok2 := byKey[e.Target]
		if ok1 && ok2 {
			out[s] = append(out[s], t)
		}
	}
	reached := make([]bool, len(g.Nodes))
	queue := []int{}
	reach := func(i int) {
		if !reached[i] {
			reached[i] = true
			queue = append(queue, i)
		}
	}
	for _, i := range entries[""] {
		reach(i)
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, v := range out[u] {
			reach(v)
		}
		if g.Nodes[u].Kind == "loop" {
			for _, v := range entries[g.Nodes[u].Key] {
				reach(v)
			}
		}
	}
	if i := slices.Index(reached, false); i >= 0 {
		return apperr.BadRequest("%s: unreachable: no path from an entry node leads to it", graphNodeName(i, g.Nodes[i].Key))
	}
	return nil
}

// Steps is the agent-node view (spec Step): one per agent node, in ordinal
// order (ties by key), with depends_on rebuilt from the node's incoming
// edges (sorted, without repeats, never nil).
func (g *Graph) Steps() []Step {
	var agents []Node
	for _, n := range g.Nodes {
		if n.Kind == "agent" {
			agents = append(agents, n)
		}
	}
	graphSortNodes(agents)
	steps := make([]Step, 0, len(agents))
	for _, n := range agents {
		deps := []string{}
		for _, e := range g.Incoming(n.Key) {
			deps = append(deps, e.Source)
		}
		slices.Sort(deps)
		deps = slices.Compact(deps)
		str := func(k string) string {
			s, _ := n.Config[k].(string)
			return s
		}
		steps = append(steps, Step{ID: n.ID, StepKey: n.Key, Kind: "agent", AgentType: str("agent_type"),
			PromptTemplate: str("prompt"), OnFailure: str("on_failure"), Ordinal: n.Ordinal, DependsOn: deps})
	}
	return steps
}

// frame is the key of the loop frame the node lives in ("" at the top
// level).
func (n *Node) frame() string {
	if n.ParentNodeKey == nil {
		return ""
	}
	return *n.ParentNodeKey
}

// Node returns the node of a key, or nil.
func (g *Graph) Node(key string) *Node {
	for i := range g.Nodes {
		if g.Nodes[i].Key == key {
			return &g.Nodes[i]
		}
	}
	return nil
}

// Incoming lists the edges whose target is key, in edge order.
func (g *Graph) Incoming(key string) []Edge {
	var out []Edge
	for _, e := range g.Edges {
		if e.Target == key {
			out = append(out, e)
		}
	}
	return out
}

// Outgoing lists the edges whose source is key, in edge order.
func (g *Graph) Outgoing(key string) []Edge {
	var out []Edge
	for _, e := range g.Edges {
		if e.Source == key {
			out = append(out, e)
		}
	}
	return out
}

// FrameNodes lists the nodes whose parent_node_key is frame ("" = the top
// level), in ordinal then key order.
func (g *Graph) FrameNodes(frame string) []Node {
	var out []Node
	for _, n := range g.Nodes {
		if n.frame() == frame {
			out = append(out, n)
		}
	}
	graphSortNodes(out)
	return out
}

func graphSortNodes(nodes []Node) {
	slices.SortStableFunc(nodes, func(a, b Node) int {
		return cmp.Or(cmp.Compare(a.Ordinal, b.Ordinal), strings.Compare(a.Key, b.Key))
	})
}

// graphHasNUL reports a NUL anywhere in a config's strings or keys:
// PostgreSQL refuses it in JSONB. Other control characters are fine there
// (prompts and scripts hold newlines and tabs).
func graphHasNUL(config map[string]any) bool {
	raw, err := json.Marshal(config)
	if err != nil {
		return false // checkConfig has refused it
	}
	// encoding/json writes NUL as \u0000; it is one unless the backslash is
	// itself escaped (an odd number of backslashes precede the u).
	for i := 0; ; {
		j := bytes.Index(raw[i:], []byte(`u0000`))
		if j < 0 {
			return false
		}
		j += i
		k := j
		for k > 0 && raw[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 1 {
			return true
		}
		i = j + 1
	}
}

// graphQuote quotes a user's string for a message, escaping control
// characters and cutting it short.
func graphQuote(s string) string {
	if utf8.RuneCountInString(s) > graphMaxKeyLen {
		r := []rune(s)
		return fmt.Sprintf("%q…", string(r[:graphMaxKeyLen]))
	}
	return fmt.Sprintf("%q", s)
}

// graphNodeName names a node in a message: by its key, or by its index when
// it has none.
func graphNodeName(i int, key string) string {
	if key == "" {
		return fmt.Sprintf("node at index %d", i)
	}
	return "node " + graphQuote(key)
}

// graphEdgeName names an edge in a message: edge a -> b, quoting an end that
// is not a well-formed key.
func graphEdgeName(e *Edge) string {
	end := func(k string) string {
		if len(k) <= graphMaxKeyLen && graphKeyPattern.MatchString(k) {
			return k
		}
		return graphQuote(k)
	}
	return "edge " + end(e.Source) + " -> " + end(e.Target)
}

// graphFrameName describes a frame: at the top level, or in loop "l".
func graphFrameName(frame string) string {
	if frame == "" {
		return "at the top level"
	}
	return "in loop " + graphQuote(frame)
}

// graphKindArticle is a kind with its indefinite article as it is read
// aloud: "a gate", "an end", "an llm_classify", "an http_request".
func graphKindArticle(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) || strings.HasPrefix(kind, "llm") || strings.HasPrefix(kind, "http") {
		return "an " + kind
	}
	return "a " + kind
}
