// Package n8nimport converts an n8n workflow export (the JSON n8n's editor
// downloads) into one of our workflows and the triggers that start it.
// Webhook, Set, IF, Switch, HTTP Request, Code, Merge, Wait, Respond to
// Webhook, No-op and the schedule triggers map onto our node kinds and
// trigger kinds; n8n's JavaScript expressions are translated to
// expr-lang where they use the common forms. Every other node becomes a
// pass-through placeholder, and everything that does not carry over is a
// warning naming the n8n node, so an import never fails because of what a
// workflow holds, only because the document is not an n8n export.
package n8nimport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"slipway/internal/platform/text"
	"slipway/internal/triggers"
	"slipway/internal/workflows"
)

// Limits of a document and of what it becomes.
const (
	MaxDocumentBytes = 1 << 20
	maxNodes         = 500  // our graph's limit
	maxEdges         = 2000 // our graph's limit
	maxConnections   = 10000
	maxKeyLen        = 64
	maxCoord         = 1e9
	maxYAMLBytes     = 1 << 20 // what a workflow's YAML form may take (the export is checked on save)
)

// TriggerSpec is a trigger the converted workflow needs: what an n8n
// trigger node became.
type TriggerSpec struct {
	Node  string               // the n8n node's name
	Input triggers.CreateInput // what creates the trigger
}

// ErrInvalid marks a document Convert refuses: not an n8n workflow export,
// or one that does not fit in a workflow.
var ErrInvalid = errors.New("cannot import the n8n workflow")

// errPanic marks a panic Convert recovered from: a bug, never an answer.
var errPanic = errors.New("internal error converting the n8n workflow")

// Convert reads an n8n workflow export and returns our workflow (without
// its project), the triggers it needs and the conversion warnings. A
// document it accepts passes the workflows validation.
func Convert(doc []byte) (in workflows.Input, specs []TriggerSpec, warnings []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			in, specs, warnings, err = workflows.Input{}, nil, nil, fmt.Errorf("%w: %v", errPanic, r)
		}
	}()
	if len(doc) > MaxDocumentBytes {
		return in, nil, nil, fmt.Errorf("%w: the document is larger than %d bytes", ErrInvalid, MaxDocumentBytes)
	}
	root, err := decode(doc)
	if err != nil {
		return in, nil, nil, err
	}
	c := &converter{keys: map[string]bool{}, byName: map[string]*srcNode{}}
	if err := c.read(root); err != nil {
		return in, nil, nil, err
	}
	return c.convert()
}

// decode parses the document with NUL characters removed (our database
// cannot store them) and unwraps an array of one workflow (n8n's CLI
// export).
func decode(doc []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: invalid JSON: %v", ErrInvalid, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: invalid JSON: data after the workflow", ErrInvalid)
	}
	if list, ok := v.([]any); ok && len(list) == 1 {
		v = list[0]
	}
	m, ok := stripNUL(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the document must be an n8n workflow export, a JSON object with nodes and connections", ErrInvalid)
	}
	if _, ok := m["nodes"].([]any); !ok {
		return nil, fmt.Errorf("%w: the document has no nodes list, so it is not an n8n workflow export", ErrInvalid)
	}
	return m, nil
}

func stripNUL(v any) any {
	switch v := v.(type) {
	case string:
		return strings.ReplaceAll(v, "\x00", "")
	case []any:
		for i := range v {
			v[i] = stripNUL(v[i])
		}
	case map[string]any:
		for k, x := range v {
			if strings.ContainsRune(k, 0) {
				delete(v, k)
				v[strings.ReplaceAll(k, "\x00", "")] = stripNUL(x)
			} else {
				v[k] = stripNUL(x)
			}
		}
	}
	return v
}

// role is what an n8n node becomes.
type role uint8

const (
	roleNode     role = iota // one or more of our nodes
	roleDrop                 // a sticky note: nothing
	roleWebhook              // a webhook trigger
	roleSchedule             // a schedule trigger
	roleManual               // a manual start: runs are started through the API
)

// srcNode is an n8n node as read.
type srcNode struct {
	index    int
	name     string
	typ      string
	version  float64
	params   map[string]any
	pos      workflows.Position
	disabled bool
	onError  string // n8n's onError, or continueRegularOutput for the older continueOnFail
	role     role
	key      string
	ins      []conn // incoming connections, by input index then document order
	outs     []conn
	built    *built
}

// conn is one n8n connection.
type conn struct {
	from, to *srcNode
	out, in  int
}

// endpoint is an output handle of one of our nodes.
type endpoint struct{ key, handle string }

// built is what an n8n node became in our graph.
type built struct {
	nodes []workflows.NodeInput
	entry string // the node its n8n inputs connect to
	// outs maps an n8n output index to our handles that fire it.
	outs map[int][]endpoint
	// through: the node has no outputs of its own (an end node); edges
	// from it leave from what feeds it.
	through bool
	// edges connect the nodes of a conversion that made several.
	edges []workflows.EdgeInput
	// allOut: every n8n output leaves from the out handle (a placeholder
	// keeps the graph connected whatever the node's outputs were).
	allOut bool
}

type converter struct {
	name     string
	nodes    []*srcNode
	byName   map[string]*srcNode
	keys     map[string]bool
	keyNode  map[string]*srcNode // our key -> the n8n node it came from
	warnings []string
	specs    []TriggerSpec
	timezone string
	refs     map[*srcNode]string
	visiting map[*srcNode]bool
	through  map[*srcNode][]endpoint // what an end node's successors connect to
}

func (c *converter) warnf(format string, args ...any) {
	c.warnings = append(c.warnings, fmt.Sprintf(format, args...))
}

// label names an n8n node in a warning.
func label(n *srcNode) string {
	return fmt.Sprintf("Node %s (%s)", quoted(n.name), n.typ)
}

func quoted(s string) string { return fmt.Sprintf("%q", s) }

// read takes the document's name, nodes and connections.
func (c *converter) read(root map[string]any) error {
	name, _ := root["name"].(string)
	c.name = cleanName(name)
	if settings, ok := root["settings"].(map[string]any); ok {
		c.timezone, _ = settings["timezone"].(string)
	}
	list := root["nodes"].([]any)
	if len(list) > maxNodes {
		return fmt.Errorf("%w: it has %d nodes, more than the %d a workflow takes", ErrInvalid, len(list), maxNodes)
	}
	for i, raw := range list {
		m, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("%w: node %d is not an object", ErrInvalid, i)
		}
		n := &srcNode{index: i, params: obj(m, "parameters")}
		n.name, _ = m["name"].(string)
		n.typ, _ = m["type"].(string)
		if n.name == "" {
			return fmt.Errorf("%w: node %d has no name", ErrInvalid, i)
		}
		if c.byName[n.name] != nil {
			return fmt.Errorf("%w: two nodes are named %q", ErrInvalid, n.name)
		}
		n.version = 1
		if v, ok := m["typeVersion"].(float64); ok && !isNonFinite(v) {
			n.version = v
		}
		if pos, ok := m["position"].([]any); ok && len(pos) == 2 {
			x, _ := pos[0].(float64)
			y, _ := pos[1].(float64)
			n.pos = workflows.Position{X: clampCoord(x), Y: clampCoord(y)}
		}
		n.disabled, _ = m["disabled"].(bool)
		n.onError, _ = m["onError"].(string)
		if cof, _ := m["continueOnFail"].(bool); cof && n.onError == "" {
			n.onError = "continueRegularOutput"
		}
		c.nodes = append(c.nodes, n)
		c.byName[n.name] = n
	}

	// Connections, in node order so the result does not depend on the
	// order of the JSON object's keys.
	conns, _ := root["connections"].(map[string]any)
	total := 0
	for _, from := range c.nodes {
		byType, ok := conns[from.name].(map[string]any)
		if !ok {
			continue
		}
		for _, typ := range sortedKeys(byType) {
			outputs, ok := byType[typ].([]any)
			if !ok {
				continue
			}
			if typ != "main" {
				if len(outputs) > 0 {
					c.warnf("%s: its %s connections (an AI sub-node's wiring) have no equivalent and were left out", label(from), quoted(typ))
				}
				continue
			}
			for out, targets := range outputs {
				list, _ := targets.([]any)
				for _, t := range list {
					tm, ok := t.(map[string]any)
					if !ok {
						continue
					}
					name, _ := tm["node"].(string)
					to := c.byName[name]
					if to == nil {
						c.warnf("%s: a connection to the unknown node %s was left out", label(from), quoted(name))
						continue
					}
					in := 0
					if f, ok := tm["index"].(float64); ok && f >= 0 && f < 100 {
						in = int(f)
					}
					if total++; total > maxConnections {
						return fmt.Errorf("%w: more than %d connections", ErrInvalid, maxConnections)
					}
					cn := conn{from: from, to: to, out: out, in: in}
					from.outs = append(from.outs, cn)
					to.ins = append(to.ins, cn)
				}
			}
		}
	}
	for _, n := range c.nodes {
		slices.SortStableFunc(n.ins, func(a, b conn) int { return a.in - b.in })
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func cleanName(raw string) string {
	name := strings.TrimSpace(text.StripControls(raw))
	if utf8.RuneCountInString(name) > 200 {
		name = strings.TrimSpace(string([]rune(name)[:200]))
	}
	if name == "" {
		name = "Imported n8n workflow"
	}
	return name
}

func clampCoord(f float64) float64 {
	if isNonFinite(f) {
		return 0
	}
	return math.Max(-maxCoord, math.Min(maxCoord, f))
}

// Node types.
const (
	typeWebhook  = "n8n-nodes-base.webhook"
	typeSchedule = "n8n-nodes-base.scheduleTrigger"
	typeCron     = "n8n-nodes-base.cron"
	typeManual   = "n8n-nodes-base.manualTrigger"
	typeStart    = "n8n-nodes-base.start"
	typeSticky   = "n8n-nodes-base.stickyNote"
	typeSet      = "n8n-nodes-base.set"
	typeIf       = "n8n-nodes-base.if"
	typeSwitch   = "n8n-nodes-base.switch"
	typeHTTP     = "n8n-nodes-base.httpRequest"
	typeCode     = "n8n-nodes-base.code"
	typeFunction = "n8n-nodes-base.function"
	typeFuncItem = "n8n-nodes-base.functionItem"
	typeMerge    = "n8n-nodes-base.merge"
	typeWait     = "n8n-nodes-base.wait"
	typeRespond  = "n8n-nodes-base.respondToWebhook"
	typeNoOp     = "n8n-nodes-base.noOp"
)

func roleOf(n *srcNode) role {
	switch n.typ {
	case typeSticky:
		return roleDrop
	case typeWebhook:
		return roleWebhook
	case typeSchedule, typeCron:
		return roleSchedule
	case typeManual, typeStart:
		return roleManual
	}
	return roleNode
}

// isTriggerType reports a trigger node we have no equivalent for.
func isTriggerType(typ string) bool {
	return strings.HasSuffix(typ, "Trigger") || strings.HasSuffix(typ, ".emailReadImap")
}

func (c *converter) convert() (workflows.Input, []TriggerSpec, []string, error) {
	for _, n := range c.nodes {
		n.role = roleOf(n)
		if n.disabled && n.role != roleDrop && n.role != roleNode {
			c.warnf("%s is disabled in n8n and was left out", label(n))
			n.role = roleDrop
		}
	}
	c.allocateKeys()
	c.refs, c.visiting, c.through = map[*srcNode]string{}, map[*srcNode]bool{}, map[*srcNode][]endpoint{}

	// Nodes.
	var in workflows.Input
	in.Name = c.name
	for _, n := range c.nodes {
		switch n.role {
		case roleWebhook:
			c.webhookTrigger(n)
		case roleSchedule:
			c.scheduleTriggers(n)
		case roleNode:
			x := c.ctx(n)
			n.built = x.build()
			in.Nodes = append(in.Nodes, n.built.nodes...)
		}
	}
	if len(in.Nodes) == 0 {
		return workflows.Input{}, nil, nil, fmt.Errorf("%w: it has no nodes besides triggers and notes, so there is nothing to run", ErrInvalid)
	}
	if len(in.Nodes) > maxNodes {
		return workflows.Input{}, nil, nil, fmt.Errorf("%w: it becomes %d nodes, more than the %d a workflow takes", ErrInvalid, len(in.Nodes), maxNodes)
	}

	// Edges.
	seen := map[workflows.EdgeInput]bool{}
	lost := map[[2]int]bool{}
	for _, n := range c.nodes {
		for _, cn := range n.outs {
			if cn.to.built == nil {
				continue
			}
			eps := c.endpoints(cn.from, cn.out, map[*srcNode]bool{})
			if len(eps) == 0 && n.built != nil && !n.built.through && !lost[[2]int{n.index, cn.out}] {
				lost[[2]int{n.index, cn.out}] = true
				c.warnf("%s: the connections of its output %d have no equivalent here and were left out", label(n), cn.out)
			}
			for _, ep := range eps {
				e := workflows.EdgeInput{Source: ep.key, SourceHandle: ep.handle, Target: cn.to.built.entry}
				if e.Source == e.Target {
					c.warnf("%s: its connection to itself closes a loop; workflows here are acyclic, so it was left out (use a loop node)", label(n))
					continue
				}
				if !seen[e] {
					seen[e] = true
					in.Edges = append(in.Edges, e)
				}
			}
		}
	}
	// The edges inside multi-node conversions (a switch's chain of gates).
	for _, n := range c.nodes {
		if n.built != nil {
			for _, e := range n.built.edges {
				if !seen[e] {
					seen[e] = true
					in.Edges = append(in.Edges, e)
				}
			}
		}
	}
	in.Edges = c.breakCycles(in.Nodes, in.Edges)
	if len(in.Edges) > maxEdges {
		return workflows.Input{}, nil, nil, fmt.Errorf("%w: it becomes %d edges, more than the %d a workflow takes", ErrInvalid, len(in.Edges), maxEdges)
	}
	c.warnStarts()
	for i := range in.Nodes {
		c.fit(&in.Nodes[i])
	}
	if err := checkSize(in); err != nil {
		return workflows.Input{}, nil, nil, err
	}
	if c.warnings == nil {
		c.warnings = []string{}
	}
	return in, c.specs, c.warnings, nil
}

// endpoints are the handles of our graph that fire an n8n node's output.
// An end node (respond to webhook) passes its inputs through.
func (c *converter) endpoints(n *srcNode, out int, visiting map[*srcNode]bool) []endpoint {
	if n.built == nil {
		return nil // a trigger: its successors are entry nodes
	}
	if n.built.allOut {
		return []endpoint{{n.key, workflows.HandleOut}}
	}
	if !n.built.through {
		return n.built.outs[out]
	}
	if eps, ok := c.through[n]; ok {
		return eps
	}
	if visiting[n] {
		return nil
	}
	visiting[n] = true
	var eps []endpoint
	for _, cn := range n.ins {
		for _, ep := range c.endpoints(cn.from, cn.out, visiting) {
			if !slices.Contains(eps, ep) {
				eps = append(eps, ep)
			}
		}
	}
	delete(visiting, n)
	c.through[n] = eps
	return eps
}

var keyJunk = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// sanitizeKey turns an n8n node name into the base of a key.
func sanitizeKey(name string) string {
	k := strings.Trim(keyJunk.ReplaceAllString(name, "_"), "_-")
	if k == "" {
		return "node"
	}
	if c := k[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		k = "n" + k
	}
	return k
}

// uniqueKey reserves a key from base: base itself, or base_2, base_3, ...
// cut so that it stays within 64 characters.
func (c *converter) uniqueKey(base string, n *srcNode) string {
	if len(base) > maxKeyLen {
		base = strings.TrimRight(base[:maxKeyLen], "_-")
	}
	k := base
	for i := 2; c.keys[k]; i++ {
		suffix := fmt.Sprintf("_%d", i)
		b := base
		if len(b)+len(suffix) > maxKeyLen {
			b = b[:maxKeyLen-len(suffix)]
		}
		k = b + suffix
	}
	c.keys[k] = true
	if c.keyNode == nil {
		c.keyNode = map[string]*srcNode{}
	}
	c.keyNode[k] = n
	return k
}

func (c *converter) allocateKeys() {
	for _, n := range c.nodes {
		if n.role == roleNode {
			n.key = c.uniqueKey(sanitizeKey(n.name), n)
		}
	}
}

// ref is what n8n's $json means after the node (its output item), as an
// expression over our environment.
func (c *converter) ref(n *srcNode) (string, error) {
	switch n.role {
	case roleWebhook, roleSchedule:
		return "trigger", nil
	case roleManual:
		return "input", nil
	case roleDrop:
		return "", untranslatable("node %q is not part of the workflow", n.name)
	}
	if r, ok := c.refs[n]; ok {
		return r, nil
	}
	var r string
	switch {
	case n.disabled:
		r = "nodes." + n.key + ".output"
	case n.typ == typeIf || n.typ == typeSwitch || n.typ == typeWait || n.typ == typeRespond:
		// These pass their input through.
		if c.visiting[n] {
			return "input", nil
		}
		c.visiting[n] = true
		r = "input"
		if len(n.ins) > 0 {
			var err error
			if r, err = c.ref(n.ins[0].from); err != nil {
				r = "input"
			}
		}
		delete(c.visiting, n)
	case n.typ == typeHTTP:
		r = "nodes." + n.key + ".output?.json"
		if fullResponse(n) {
			r = "nodes." + n.key + ".output"
		}
	case n.typ == typeCode || n.typ == typeFunction || n.typ == typeFuncItem:
		r = "nodes." + n.key + ".output?.result"
	default:
		r = "nodes." + n.key + ".output"
	}
	c.refs[n] = r
	return r, nil
}

// nodeCtx is the conversion of one n8n node.
type nodeCtx struct {
	c  *converter
	n  *srcNode
	sc jsScope
}

func (c *converter) ctx(n *srcNode) *nodeCtx {
	x := &nodeCtx{c: c, n: n}
	x.sc = jsScope{json: "input", node: func(name string) (string, error) {
		m := c.byName[name]
		if m == nil {
			return "", untranslatable("there is no node named %q", name)
		}
		return c.ref(m)
	}}
	if len(n.ins) > 0 {
		if r, err := c.ref(n.ins[0].from); err == nil {
			x.sc.json = r
		}
	}
	return x
}

func (x *nodeCtx) warn(format string, args ...any) {
	x.c.warnf("%s: %s", label(x.n), fmt.Sprintf(format, args...))
}

// breakCycles drops the edges that close a cycle (n8n allows loops; our
// graphs are acyclic), found by a depth-first search in node order.
func (c *converter) breakCycles(nodes []workflows.NodeInput, edges []workflows.EdgeInput) []workflows.EdgeInput {
	out := map[string][]int{}
	for i, e := range edges {
		out[e.Source] = append(out[e.Source], i)
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	drop := map[int]bool{}
	type frame struct {
		key string
		i   int
	}
	for _, start := range nodes {
		if color[start.Key] != white {
			continue
		}
		stack := []frame{{start.Key, 0}}
		color[start.Key] = grey
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.i >= len(out[top.key]) {
				color[top.key] = black
				stack = stack[:len(stack)-1]
				continue
			}
			ei := out[top.key][top.i]
			top.i++
			t := edges[ei].Target
			switch color[t] {
			case grey:
				drop[ei] = true
			case white:
				color[t] = grey
				stack = append(stack, frame{t, 0})
			}
		}
	}
	if len(drop) == 0 {
		return edges
	}
	kept := make([]workflows.EdgeInput, 0, len(edges)-len(drop))
	for i, e := range edges {
		if !drop[i] {
			kept = append(kept, e)
			continue
		}
		from, to := c.keyNode[e.Source], c.keyNode[e.Target]
		c.warnf("%s: its connection to %s closes a loop; workflows here are acyclic, so it was left out (use a loop node to repeat work)",
			label(from), quoted(to.name))
	}
	return kept
}

// warnStarts warns where runs start differently: nodes n8n never started
// on their own now start every run, and several triggers all start the
// whole workflow.
func (c *converter) warnStarts() {
	triggers := 0
	for _, n := range c.nodes {
		switch n.role {
		case roleWebhook, roleSchedule, roleManual:
			triggers++
		case roleNode:
			if len(n.ins) == 0 && !isTriggerType(n.typ) {
				x := c.ctx(n)
				x.warn("it has no input in n8n, so it now runs at the start of every run")
			}
		}
	}
	if schedule := c.firstOf(roleSchedule); schedule != nil {
		for _, n := range c.nodes {
			if n.built == nil {
				continue
			}
			raw, _ := json.Marshal(n.built.nodes)
			if bytes.Contains(raw, []byte("trigger.timestamp")) || bytes.Contains(raw, []byte(`trigger[\"`)) {
				c.warnf("%s: what follows it reads n8n's schedule fields (timestamp, readable dates); a schedule's trigger here is {kind, trigger_id, scheduled_for, fired_at}, so use trigger.fired_at", label(schedule))
				break
			}
		}
	}
	if triggers > 1 {
		c.warnf("The workflow has %d triggers: each starts every node without an input, whichever trigger fired (check trigger.kind in a gate to tell them apart)", triggers)
	}
}

func (c *converter) firstOf(r role) *srcNode {
	for _, n := range c.nodes {
		if n.role == r {
			return n
		}
	}
	return nil
}

// checkSize refuses a conversion whose YAML form would be more than a
// workflow takes.
func checkSize(in workflows.Input) error {
	w := &workflows.Workflow{Name: in.Name}
	for i, n := range in.Nodes {
		pos := workflows.Position{}
		if n.Position != nil {
			pos = *n.Position
		}
		w.Nodes = append(w.Nodes, workflows.Node{Key: n.Key, Kind: n.Kind, Ordinal: int64(i), Config: n.Config, Position: pos})
	}
	for _, e := range in.Edges {
		w.Edges = append(w.Edges, workflows.Edge{Source: e.Source, SourceHandle: e.SourceHandle, Target: e.Target})
	}
	doc, err := workflows.ExportYAML(w)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if len(doc) > maxYAMLBytes {
		return fmt.Errorf("%w: the converted workflow would be %d bytes, more than the %d a workflow takes", ErrInvalid, len(doc), maxYAMLBytes)
	}
	return nil
}

// ---- reading parameters ----

func obj(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	if o == nil {
		return map[string]any{}
	}
	return o
}

func list(m map[string]any, key string) []map[string]any {
	raw, _ := m[key].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, r := range raw {
		if o, ok := r.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}

func str(m map[string]any, key, def string) string {
	if s, ok := m[key].(string); ok {
		return s
	}
	return def
}

func num(m map[string]any, key string, def float64) float64 {
	if f, ok := m[key].(float64); ok && !isNonFinite(f) {
		return f
	}
	return def
}

func boolean(m map[string]any, key string) bool {
	b, _ := m[key].(bool)
	return b
}
