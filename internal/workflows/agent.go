package workflows

import (
	"context"
	"encoding/json"
	"errors"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// startAgent creates an agent node's task in the node's transition, so the
// node waits on a task that exists, or on none.
func (e *Engine) startAgent(ctx context.Context, tx *db.Tx, st *runState, s step, o *outcome) error {
	c, err := decodeConfig[AgentConfig](s.node.Config)
	if err != nil {
		*o = failed("config: %v", err)
		return nil
	}
	prompt, err := e.exprs.render(ctx, c.Prompt, s.env)
	if err != nil {
		*o = failed("prompt: %v", err)
		return nil
	}
	title := s.node.Key
	if c.Title != "" {
		if title, err = e.exprs.render(ctx, c.Title, s.env); err != nil {
			*o = failed("title: %v", err)
			return nil
		}
	}
	id, err := e.agents.StartAgent(ctx, tx, AgentRequest{WorkspaceID: st.run.WorkspaceID, ProjectID: st.run.ProjectID, CreatedBy: st.run.CreatedBy,
		Title: s.red.Text(title), Prompt: s.red.Text(prompt), Config: c}) // a prompt goes to a model: no secret of the run
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Code != apperr.CodeInternal && ae.Code != apperr.CodeDatabase {
		*o = failed("starting the task: %s", ae.Message) // a bad profile, an archived project: the node fails, not the engine
		return nil
	}
	if err != nil {
		return err
	}
	s.nr.TaskID = &id
	return nil
}

// TaskEnd is how a task ended, as an agent node sees it.
type TaskEnd struct {
	ID, WorkspaceID, Status, Error, Branch string
	Result                                 json.RawMessage // the agent's result line, when it gave one
}

// Task statuses an agent node reads as success.
func taskSucceeded(status string) bool { return status == "done" || status == "done_pr" }

// TaskEnded records the end of an agent node's task, in the transaction
// where the task ended: the node succeeds with the task's outcome or fails
// (unless its on_failure is continue).
func (e *Engine) TaskEnded(ctx context.Context, tx *db.Tx, t TaskEnd) error {
	runIDs, err := runsWaitingOnTask(ctx, tx, t.WorkspaceID, t.ID)
	if err != nil {
		return err
	}
	for _, runID := range runIDs {
		_, err := e.transitionTx(ctx, tx, t.WorkspaceID, runID, nil, func(_ *db.Tx, st *runState) error {
			if st.run.Status != RunRunning {
				return nil
			}
			for _, nr := range st.nodes {
				if nr.TaskID == nil || *nr.TaskID != t.ID || nr.Status != NodeWaiting {
					continue
				}
				out := map[string]any{"task_id": t.ID, "status": t.Status, "branch": t.Branch, "error": t.Error, "result": decode(t.Result)}
				if taskSucceeded(t.Status) {
					return st.apply(nr, succeed(HandleOut, out))
				}
				n := st.graph.Node(nr.Key)
				if c, err := decodeConfig[AgentConfig](n.Config); err == nil && c.OnFailure == "continue" {
					return st.apply(nr, succeed(HandleOut, out))
				}
				o := failed("task %s ended %s", t.ID, t.Status)
				if t.Error != "" {
					o = failed("task %s ended %s: %s", t.ID, t.Status, t.Error)
				}
				o.output = out
				return st.apply(nr, o)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
