package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"slipway/internal/platform/clock"
	"slipway/internal/platform/ids"
)

// packedNode is a node run as a run written once keeps it in its row's
// nodes column (a JSON array in the node runs' order; short keys, as it is
// stored for every such run). Times are microseconds from the run's
// created_at; the id is not kept but derived from the run's (nodeRunID).
type packedNode struct {
	Frame     string          `json:"f,omitempty"`
	Key       string          `json:"k"`
	Kind      string          `json:"kd"`
	Status    string          `json:"s"`
	Handle    string          `json:"h,omitempty"`
	Output    json.RawMessage `json:"o,omitempty"`
	Error     string          `json:"e,omitempty"`
	State     json.RawMessage `json:"st,omitempty"`
	Attempt   int             `json:"a,omitempty"`
	WaitEvent *string         `json:"w,omitempty"`
	TaskID    *string         `json:"tk,omitempty"`
	Created   int64           `json:"c"`
	Started   *int64          `json:"sa,omitempty"`
	Finished  *int64          `json:"fa,omitempty"`
}

// nodeRunID is the id of a packed run's node run at seq (from 1): derived
// from the run's, apart from its events' (ids.Derive with the top bit of
// the number set).
func nodeRunID(runID string, seq int) string { return ids.Derive(runID, 1<<23|int64(seq)) }

// maxPackedNodes bounds the node runs a run keeps packed (nodeRunID numbers
// them in 23 bits); a run with more keeps them as rows.
const maxPackedNodes = 1 << 16

// packNodes packs a run's node runs into its row (r.Nodes), in seq order.
func packNodes(r *runRow, nodes []*nodeRun) error {
	base := clock.Normalize(r.CreatedAt)
	micros := func(t time.Time) int64 { return clock.Normalize(t).Sub(base).Microseconds() }
	opt := func(t *time.Time) *int64 {
		if t == nil {
			return nil
		}
		m := micros(*t)
		return &m
	}
	out := make([]packedNode, len(nodes))
	for i, n := range nodes {
		if n.Seq != i+1 {
			return fmt.Errorf("workflows: node run %s has seq %d at %d", n.Key, n.Seq, i+1)
		}
		out[i] = packedNode{Frame: n.Frame, Key: n.Key, Kind: n.Kind, Status: n.Status, Handle: n.Handle, Output: n.Output, Error: n.Error,
			State: n.State, Attempt: n.Attempt, WaitEvent: n.WaitEvent, TaskID: n.TaskID, Created: micros(n.CreatedAt), Started: opt(n.StartedAt),
			Finished: opt(n.FinishedAt)}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("workflows: pack node runs: %w", err)
	}
	r.Nodes = b
	return nil
}

// unpackNodes reads the node runs packed in a run's row.
func unpackNodes(r *runRow) ([]*nodeRun, error) {
	var ps []packedNode
	if err := json.Unmarshal(r.Nodes, &ps); err != nil {
		return nil, fmt.Errorf("workflows: packed node runs of %s: %w", r.ID, err)
	}
	base := clock.Normalize(r.CreatedAt)
	at := func(m int64) time.Time { return base.Add(time.Duration(m) * time.Microsecond) }
	opt := func(m *int64) *time.Time {
		if m == nil {
			return nil
		}
		t := at(*m)
		return &t
	}
	out := make([]*nodeRun, len(ps))
	for i, p := range ps {
		out[i] = &nodeRun{ID: nodeRunID(r.ID, i+1), RunID: r.ID, Frame: p.Frame, Key: p.Key, Kind: p.Kind, Status: p.Status, Handle: p.Handle,
			Output: p.Output, Error: p.Error, State: p.State, Attempt: p.Attempt, WaitEvent: p.WaitEvent, TaskID: p.TaskID, Seq: i + 1,
			CreatedAt: at(p.Created), StartedAt: opt(p.Started), FinishedAt: opt(p.Finished)}
	}
	return out, nil
}

// packable says whether a run written once keeps its node runs packed:
// not too many, and none that something outside the row may name (a task
// or an event finds its node in node_runs; an agent or code node's work
// names its node run's id).
func packable(nodes []*nodeRun) bool {
	if len(nodes) > maxPackedNodes {
		return false
	}
	for _, n := range nodes {
		if n.TaskID != nil || n.WaitEvent != nil || n.Kind == "agent" || n.Kind == "code" {
			return false
		}
	}
	return true
}
