package workflows

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"slipway/internal/platform/db"
)

// Workflow versions: each distinct graph of a workflow is stored once
// (workflow_graphs, rows that never change) and a run names the version it
// started with, so editing a workflow never changes a run in flight and a
// run does not carry a copy of its graph.

// graphHash is the content hash under which a workflow stores a graph once.
func graphHash(graph []byte) string {
	sum := sha256.Sum256(graph)
	return hex.EncodeToString(sum[:])
}

// Graph returns a run's graph: its version, read once per process.
func (e *Engine) Graph(ctx context.Context, q db.Queryer, r *runRow) (*Graph, error) {
	if g, ok := e.graphs.get(r.GraphID); ok {
		return g, nil
	}
	raw, err := readGraph(ctx, q, r)
	if err != nil {
		return nil, err
	}
	g, err := parseGraph(raw)
	if err != nil {
		return nil, fmt.Errorf("workflows: graph of run %s: %w", r.ID, err)
	}
	e.graphs.put(r.GraphID, g)
	return g, nil
}

func parseGraph(raw []byte) (*Graph, error) {
	var g Graph
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// bounded is a map kept under a bound: when full, a new key forgets one
// entry at random. Only memory is bounded; an entry is never stale for the
// caches below (their keys name immutable values).
type bounded[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

// graphCacheMax bounds each cache.
const graphCacheMax = 1024

func (c *bounded[K, V]) get(k K) (V, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *bounded[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[K]V{}
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= graphCacheMax {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[k] = v
}

// graphCache holds parsed graph versions by id. A version never changes and
// its id is never reused, so an entry is never stale, on any replica (one
// stored by a transaction that rolled back is merely never asked for).
// Graphs in it are shared: read them, never write them.
type graphCache = bounded[string, *Graph]

// storedTrigger is what a run stores of its trigger: a webhook's body is
// also the run's input, so a trigger whose body is the input is stored
// without it (bodyIsInput) and triggerValue puts it back.
func storedTrigger(trigger, input json.RawMessage) (stored json.RawMessage, bodyIsInput bool) {
	if len(trigger) == 0 || trigger[0] != '{' {
		return trigger, false
	}
	var t map[string]json.RawMessage
	if json.Unmarshal(trigger, &t) != nil {
		return trigger, false
	}
	body, ok := t["body"]
	if !ok {
		return trigger, false
	}
	// The trigger was encoded with encoding/json: its body is the input
	// compacted and HTML-escaped.
	var want bytes.Buffer
	if json.Compact(&want, input) != nil {
		return trigger, false
	}
	var escaped bytes.Buffer
	json.HTMLEscape(&escaped, want.Bytes())
	if !bytes.Equal(body, escaped.Bytes()) && !bytes.Equal(body, want.Bytes()) {
		return trigger, false
	}
	delete(t, "body")
	out, err := json.Marshal(t)
	if err != nil {
		return trigger, false
	}
	return out, true
}

// triggerBody is the body of the delivery that started the run, as it
// came (nil when none: a manual run, a schedule).
func (r *runRow) triggerBody() json.RawMessage {
	if r.TriggerBodyIsInput {
		return r.Input
	}
	var t struct {
		Body json.RawMessage `json:"body"`
	}
	if json.Unmarshal(r.Trigger, &t) != nil || len(t.Body) == 0 || string(t.Body) == "null" {
		return nil
	}
	return t.Body
}

// triggerValue is the run's trigger as expressions see it.
func (r *runRow) triggerValue() any {
	t := decode(r.Trigger)
	if m, ok := t.(map[string]any); ok && r.TriggerBodyIsInput {
		m["body"] = decode(r.Input)
	}
	return t
}

// definitions maps a workflow's graph as stored (by workflow and the hash
// of the stored text) to its version and parsed form, so that starting a
// run reads the workflow's row and nothing else of its graph: no decoding,
// re-encoding or version lookup on every delivery. An edit changes the
// stored text, and so the key, on every replica alike; an entry is only
// kept once the transaction that found or stored its version committed.
// The bound only limits memory.
type definitions = bounded[defKey, definition]

type defKey struct {
	workflow string
	sum      [sha256.Size]byte
}

type definition struct {
	graphID string
	graph   *Graph
}

// definition is the version and parsed graph of a workflow's stored graph
// (raw), storing the version when it is new.
func (e *Engine) definition(ctx context.Context, tx *db.Tx, workspaceID, workflowID string, raw []byte, now time.Time) (definition, error) {
	k := defKey{workflow: workflowID, sum: sha256.Sum256(raw)}
	if d, ok := e.defs.get(k); ok {
		return d, nil
	}
	// The version's text is the graph as a Workflow carries it (nil lists
	// as empty ones), as versions have always been stored.
	var stored Graph
	if err := json.Unmarshal(raw, &stored); err != nil {
		return definition{}, fmt.Errorf("workflows: graph of %s: %w", workflowID, err)
	}
	var w Workflow
	w.setGraph(&stored)
	graph, err := json.Marshal(w.graph())
	if err != nil {
		return definition{}, err
	}
	graphID, err := graphVersion(ctx, tx, workspaceID, workflowID, graph, now)
	if err != nil {
		return definition{}, err
	}
	g, ok := e.graphs.get(graphID)
	if !ok {
		if g, err = parseGraph(graph); err != nil {
			return definition{}, err
		}
		e.graphs.put(graphID, g)
	}
	d := definition{graphID: graphID, graph: g}
	tx.AfterCommit(func() { e.defs.put(k, d) })
	return d, nil
}
