package workflows

import (
	"context"
	"time"

	"slipway/internal/billing"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/pubsub"
	"slipway/internal/runs"
)

// Runner is the engine as the service uses it: the only ways a start, a
// cap, a person, an event or a deletion changes a run. Each change happens
// in one transaction that holds the run's lock (the caller's tx where it
// takes one, else its own); the run's working state (runState) never
// leaves the engine. *Engine implements it.
type Runner interface {
	// Start writes a new run of a workflow whose graph is stored as raw
	// (its version found or stored once): queued behind a cap, or admitted
	// and, in tx, run through its first inline nodes.
	Start(ctx context.Context, tx *db.Tx, r *runRow, raw []byte, capped bool) (*Started, error)
	// Admit starts the project's queued runs that its caps now let through.
	Admit(ctx context.Context, tx *db.Tx, workspaceID, projectID string) error
	// Cancel ends a run and what it started as cancelled; an ended run
	// stays as it is. tx nil: in a transaction of its own.
	Cancel(ctx context.Context, tx *db.Tx, workspaceID, runID, reason string) (*runRow, error)
	// Decide answers a run's waiting human gate: nodeKey's, or the oldest
	// waiting one when nodeKey is "".
	Decide(ctx context.Context, workspaceID, runID, nodeKey string, d Decided) (*runRow, error)
	// Deliver resumes the run's wait_event nodes waiting for the named
	// event, with the payload in their output, and says how many.
	Deliver(ctx context.Context, workspaceID, runID, event string, payload any) (int, error)
	// Graph is the graph a run started with.
	Graph(ctx context.Context, q db.Queryer, r *runRow) (*Graph, error)
	// Ends tells of runs' ends (the payload is the run's id); Close it.
	Ends() *pubsub.Subscription
	// Try runs one node alone in env, for a run r that is not stored, and
	// stores nothing: the editor's "test this node". A code node's test is
	// queued as a job of its own (its result has a test id).
	Try(ctx context.Context, r *runRow, n *Node, env map[string]any) (NodeTestResult, error)
	// Tried reads a code node's test of a workflow.
	Tried(ctx context.Context, workspaceID, workflowID, testID string) (*NodeTestResult, error)
}

var _ Runner = (*Engine)(nil)

// Decided is a person's decision on a human gate, as its node's output
// records it.
type Decided struct {
	Handle   string // HandleApproved or HandleRejected
	Decision string // approve or reject
	By       string // the user's id
	Comment  string
}

// Start implements Runner.
func (e *Engine) Start(ctx context.Context, tx *db.Tx, r *runRow, raw []byte, capped bool) (*Started, error) {
	if e.quota != nil {
		if err := e.quota.Check(ctx, tx, billing.Subject{WorkspaceID: r.WorkspaceID}, "runs.concurrent", 1); err != nil {
			return nil, err
		}
	}
	def, err := e.definition(ctx, tx, r.WorkspaceID, r.WorkflowID, raw, r.CreatedAt)
	if err != nil {
		return nil, err
	}
	r.GraphID = def.graphID
	// Admitted at once, it runs its first inline nodes in this transaction
	// (which records its queued event with the rest): a run of inline nodes
	// only ends here, with nothing queued for it.
	started := &Started{ID: r.ID, Status: RunQueued}
	if err := e.startNew(ctx, tx, r, def.graph, capped, started); err != nil {
		return nil, err
	}
	if started.Status == RunQueued {
		if err := e.runs.Append(ctx, tx, r.WorkspaceID, r.LogID, r.ID, queuedEvent(r.WorkflowID, r.CreatedAt)); err != nil {
			return nil, err
		}
	}
	return started, nil
}

// queuedEvent is a run's first event: queued, naming its workflow.
func queuedEvent(workflowID string, at time.Time) runs.NewEvent {
	return runs.Value("run", map[string]any{"status": RunQueued, "workflow_id": workflowID}, at)
}

// Cancel implements Runner.
func (e *Engine) Cancel(ctx context.Context, tx *db.Tx, workspaceID, runID, reason string) (*runRow, error) {
	cancel := func(_ *db.Tx, st *runState) error {
		st.finish(RunCancelled, nil, reason)
		return nil
	}
	var st *runState
	var err error
	if tx == nil {
		st, err = e.transition(ctx, workspaceID, runID, nil, cancel)
	} else {
		st, err = e.transitionTx(ctx, tx, workspaceID, runID, nil, cancel)
	}
	if err != nil {
		return nil, err
	}
	return st.run, nil
}

// Decide implements Runner.
func (e *Engine) Decide(ctx context.Context, workspaceID, runID, nodeKey string, d Decided) (*runRow, error) {
	st, err := e.transition(ctx, workspaceID, runID, nil, func(_ *db.Tx, st *runState) error {
		if st.run.Status != RunRunning {
			return apperr.BadRequest("the run is %s, not waiting for a decision", st.run.Status)
		}
		var gate *nodeRun
		for _, nr := range st.nodes {
			if nr.Kind != "human" || (nodeKey != "" && nr.Key != nodeKey) {
				continue
			}
			if nr.Status == NodeWaiting && (gate == nil || nr.StartedAt.Before(*gate.StartedAt)) {
				gate = nr
			}
		}
		if gate == nil {
			if nodeKey != "" {
				if n := st.graph.Node(nodeKey); n == nil || n.Kind != "human" {
					return apperr.NotFound("human node")
				}
				return apperr.BadRequest("node %q is not waiting for a decision", nodeKey)
			}
			return apperr.BadRequest("the run is not waiting for a decision")
		}
		out := map[string]any{"decision": d.Decision, "decided_by": d.By, "decided_at": st.now.Format(time.RFC3339)}
		if d.Comment != "" {
			out["comment"] = d.Comment
		}
		return st.apply(gate, succeed(d.Handle, out))
	})
	if err != nil {
		return nil, err
	}
	return st.run, nil
}

// Deliver implements Runner.
func (e *Engine) Deliver(ctx context.Context, workspaceID, runID, event string, payload any) (int, error) {
	n := 0
	_, err := e.transition(ctx, workspaceID, runID, nil, func(_ *db.Tx, st *runState) error {
		n = 0 // a transition may be tried again
		if st.run.Status != RunRunning {
			return nil
		}
		for _, nr := range st.nodes {
			if nr.Kind == "wait_event" && nr.Status == NodeWaiting && nr.WaitEvent != nil && *nr.WaitEvent == event {
				if err := st.apply(nr, succeed(HandleEvent, map[string]any{"event": event, "payload": payload})); err != nil {
					return err
				}
				st.stopped = append(st.stopped, nr) // its timer goes
				n++
			}
		}
		return nil
	})
	return n, err
}

// Ends implements Runner.
func (e *Engine) Ends() *pubsub.Subscription { return e.bus.Subscribe(TopicRunEnded) }
