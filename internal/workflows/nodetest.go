package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/ids"
)

// NodeTest is one node run alone with sample data: the editor's "test this
// node". The node is the one the editor holds, saved or not.
type NodeTest struct {
	Node    NodeInput                  `json:"node" doc:"The node to test, as the editor holds it (its parent_node_key is ignored)"`
	Input   json.RawMessage            `json:"input,omitempty" doc:"Sample run input (expressions: input)"`
	Trigger json.RawMessage            `json:"trigger,omitempty" doc:"Sample trigger data (expressions: trigger)"`
	Nodes   map[string]json.RawMessage `json:"nodes,omitempty" maxProperties:"200" doc:"Sample outputs of other nodes by key (expressions: nodes.<key>.output)"`
	Item    json.RawMessage            `json:"item,omitempty" doc:"Sample loop item, for a node inside a loop (expressions: item; index is 0)"`
}

// NodeTestResult is how the node went. Nothing of it is stored.
type NodeTestResult struct {
	Status     string          `json:"status" enum:"succeeded,failed,waiting"`
	Handle     string          `json:"handle" doc:"The handle it fires, when it succeeded"`
	Output     json.RawMessage `json:"output" nullable:"true" doc:"Its output, as a run would record it"`
	Error      string          `json:"error" doc:"Why it failed"`
	Waits      string          `json:"waits,omitempty" doc:"For the kinds that wait in a run (human, wait_event, loop, agent): what it would wait on; nothing is started"`
	DurationMS int64           `json:"duration_ms"`
}

// nodeTestTimeout bounds a test whatever its node's own timeouts say.
const nodeTestTimeout = time.Minute

// TestNode runs one node of a workflow alone with sample data, the way a
// run would run it (an http_request or notify_webhook node really sends
// its request, under the same outbound rules), and stores nothing. Kinds
// that wait in a run say what they would wait on instead of waiting.
func (s *Service) TestNode(ctx context.Context, ws *actor.Workspace, id string, in NodeTest) (*NodeTestResult, error) {
	w, err := s.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	samples := map[string]json.RawMessage{"input": in.Input, "trigger": in.Trigger, "item": in.Item}
	for k, v := range in.Nodes {
		samples["nodes."+k] = v
	}
	total := 0
	for name, v := range samples {
		if len(v) == 0 {
			continue
		}
		if !json.Valid(v) {
			return nil, apperr.BadRequest("%s must be JSON", name)
		}
		total += len(v)
	}
	if total > maxInputBytes {
		return nil, apperr.BadRequest("the samples are larger than %d bytes together", maxInputBytes)
	}
	node := in.Node
	node.ID, node.ParentNodeKey, node.Position = "", nil, nil
	// The nodes it reads are stand-ins holding their samples, so the config
	// is checked as a save checks it (a reference to no node is refused).
	nodesIn := []NodeInput{node}
	for k := range in.Nodes {
		if k != node.Key {
			nodesIn = append(nodesIn, NodeInput{Key: k, Kind: "transform", Config: map[string]any{"expression": "null"}})
		}
	}
	g, err := buildGraph(Input{Name: "test", Nodes: nodesIn}, nil, ids.New)
	if err != nil {
		return nil, err
	}
	if err := s.checkNodeTypes(ctx, s.db.R, ws.ID, g); err != nil {
		return nil, err
	}
	n := g.Node(node.Key)
	if n.Kind == "code" {
		return nil, apperr.BadRequest("a code node runs in a sandbox as a job: test it by running the workflow")
	}
	nodes := map[string]any{}
	for k, v := range in.Nodes {
		nodes[k] = map[string]any{"output": decode(v), "status": NodeSucceeded, "handle": HandleOut, "error": ""}
	}
	now := s.clock.Now()
	run := &runRow{ID: ids.New(), WorkspaceID: ws.ID, ProjectID: w.ProjectID, WorkflowID: w.ID, Input: in.Input, CreatedAt: now}
	env := map[string]any{
		"input":   decode(in.Input),
		"trigger": decode(in.Trigger),
		"nodes":   nodes,
		"run":     map[string]any{"id": run.ID, "workflow_id": w.ID, "project_id": w.ProjectID, "created_at": now.Format(time.RFC3339)},
		"env":     map[string]any{},
	}
	if len(in.Item) > 0 {
		env["item"], env["index"] = decode(in.Item), 0
	}
	tctx, cancel := context.WithTimeout(ctx, nodeTestTimeout)
	defer cancel()
	start := time.Now()
	res := s.engine.Try(tctx, run, n, env)
	res.DurationMS = time.Since(start).Milliseconds()
	return &res, nil
}

// Try implements Runner.
func (e *Engine) Try(ctx context.Context, r *runRow, n *Node, env map[string]any) NodeTestResult {
	s := step{node: n, nr: &nodeRun{ID: ids.New(), Key: n.Key}, env: env, run: r}
	if n.Kind == "agent" {
		// A run creates a task here; a test only shows the prompt it would get.
		c, err := decodeConfig[AgentConfig](n.Config)
		if err != nil {
			return NodeTestResult{Status: NodeFailed, Error: "config: " + err.Error()}
		}
		prompt, err := e.exprs.render(ctx, c.Prompt, env)
		if err != nil {
			return NodeTestResult{Status: NodeFailed, Error: "prompt: " + err.Error()}
		}
		return NodeTestResult{Status: NodeWaiting, Waits: "a task with the prompt: " + prompt}
	}
	o := e.executeNode(ctx, s)
	res := NodeTestResult{Status: o.status, Handle: o.handle, Error: o.err}
	if o.output != nil {
		b, err := json.Marshal(o.output)
		if err != nil {
			return NodeTestResult{Status: NodeFailed, Error: "output: " + err.Error()}
		}
		if len(b) > maxOutputBytes {
			return NodeTestResult{Status: NodeFailed, Error: fmt.Sprintf("output: %d bytes, at most %d", len(b), maxOutputBytes)}
		}
		res.Output = b
	}
	if o.endRun && o.failure != "" {
		res.Status, res.Error = NodeFailed, o.failure
	}
	if o.status != NodeWaiting {
		return res
	}
	res.Handle = ""
	switch st := o.state.(type) {
	case humanState:
		res.Waits = "a person's decision on: " + st.Message
	case loopState:
		res.Output, _ = json.Marshal(st.Items) // the items it would iterate
		res.Waits = fmt.Sprintf("%d iterations of its body, %d at a time", len(st.Items), st.Parallelism)
	default:
		if o.waitEvent != "" {
			res.Waits = "the event " + o.waitEvent
			if o.timeout > 0 {
				res.Waits += fmt.Sprintf(" (or its timeout, after %s)", o.timeout)
			}
		}
	}
	return res
}
