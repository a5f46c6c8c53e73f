package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/runs"
)

// StartRun queues a run of a workflow with an input (any JSON; null when
// absent); caps decide when it starts.
func (s *Service) StartRun(ctx context.Context, ws *actor.Workspace, u *actor.User, id string, input, trigger json.RawMessage) (string, error) {
	var createdBy *string
	if u != nil {
		createdBy = &u.ID
	}
	var runID string
	err := s.db.Tx(ctx, func(tx *db.Tx) (err error) {
		started, err := s.StartRunTx(ctx, tx, ws.ID, createdBy, id, input, trigger)
		if err == nil {
			runID = started.ID
		}
		return err
	})
	return runID, err
}

// maxInputBytes caps a run's input.
const maxInputBytes = 1 << 20

// StartRunTx starts a run in tx (a trigger's, with what fired it): it is
// queued, and admitted at once when the caps let it through, and then its
// ready inline nodes run in tx too. createdBy is who may decide its human
// gates.
func (s *Service) StartRunTx(ctx context.Context, tx *db.Tx, workspaceID string, createdBy *string, id string, input, trigger json.RawMessage) (*Started, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("workflow")
	}
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	if len(trigger) == 0 {
		trigger = json.RawMessage("null")
	}
	if len(input) > maxInputBytes || len(trigger) > 2*maxInputBytes {
		return nil, apperr.BadRequest("input is larger than %d bytes", maxInputBytes)
	}
	if !json.Valid(input) || !json.Valid(trigger) {
		return nil, apperr.BadRequest("input must be JSON")
	}
	w, err := startable(ctx, tx, workspaceID, id)
	if err != nil {
		return nil, err
	}
	stored, bodyIsInput := storedTrigger(trigger, input)
	// The engine writes the run and its log, naming the version of the
	// workflow's graph it starts with (so editing the workflow never
	// changes it): queued, or as its first inline nodes leave it.
	row := &runRow{ID: ids.New(), WorkspaceID: workspaceID, ProjectID: w.projectID, WorkflowID: id, LogID: ids.New(), Status: RunQueued,
		Input: input, Trigger: stored, TriggerBodyIsInput: bodyIsInput, CreatedAt: s.clock.Now(), CreatedBy: createdBy}
	return s.engine.Start(ctx, tx, row, w.graph, w.capped)
}

// WaitRun waits until a run of the workspace has ended or d has passed,
// and returns it as it is then (ended or not).
func (s *Service) WaitRun(ctx context.Context, workspaceID, id string, d time.Duration) (*RunView, error) {
	ws := &actor.Workspace{ID: workspaceID}
	// Subscribed before the first look, so an end between the two is heard.
	sub := s.engine.Ends()
	defer sub.Close()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	poll := time.NewTicker(runWaitPoll)
	defer poll.Stop()
	for {
		v, err := s.GetRun(ctx, ws, id)
		if err != nil || runEnded(v.Status) {
			return v, err
		}
	wait:
		for {
			select {
			case m := <-sub.C:
				if m.Reset || m.Payload == id {
					break wait
				}
			case <-poll.C:
				break wait
			case <-deadline.C:
				return s.GetRun(ctx, ws, id)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
}

func runEnded(status string) bool {
	return status == RunSucceeded || status == RunFailed || status == RunCancelled
}

// GetRun reads a run with its nodes' states.
func (s *Service) GetRun(ctx context.Context, ws *actor.Workspace, id string) (*RunView, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("workflow run")
	}
	var v *RunView
	err := s.db.ReadTx(ctx, func(q db.Queryer) error {
		r, err := getRunRow(ctx, q, ws.ID, id)
		if err != nil {
			return err
		}
		v, err = s.viewIn(ctx, q, r)
		return err
	})
	return v, err
}

func (s *Service) view(ctx context.Context, r *runRow) (*RunView, error) {
	return s.viewIn(ctx, s.db.R, r)
}

// viewIn is view reading through q (a snapshot, with the run row read in
// it).
func (s *Service) viewIn(ctx context.Context, q db.Queryer, r *runRow) (*RunView, error) {
	g, err := s.engine.Graph(ctx, q, r)
	if err != nil {
		return nil, err
	}
	nodes, err := nodesOf(ctx, q, r)
	if err != nil {
		return nil, err
	}
	v := &RunView{ID: r.ID, RunID: r.ID, WorkflowID: r.WorkflowID, ProjectID: r.ProjectID, Status: r.Status, Input: r.Input, Output: r.Output,
		Error: r.Error, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, CreatedBy: r.CreatedBy, WorkspaceID: r.WorkspaceID,
		Nodes: []NodeRunView{}, WaitingOn: []string{}}
	seen := map[string]bool{}
	for _, n := range nodes {
		v.Nodes = append(v.Nodes, NodeRunView{Key: n.Key, Kind: n.Kind, Frame: n.Frame, Status: n.Status, Handle: n.Handle, Output: n.Output,
			Error: n.Error, Attempt: n.Attempt, TaskID: n.TaskID, StartedAt: n.StartedAt, FinishedAt: n.FinishedAt})
		if n.Frame == "" {
			seen[n.Key] = true
		}
		if n.Status == NodeWaiting && (n.Kind == "human" || n.Kind == "wait_event") {
			v.WaitingOn = append(v.WaitingOn, n.Key)
		}
	}
	for _, n := range g.FrameNodes("") {
		if !seen[n.Key] {
			v.Nodes = append(v.Nodes, NodeRunView{Key: n.Key, Kind: n.Kind, Status: "pending"})
		}
	}
	return v, nil
}

// CancelRun cancels a run and everything it started; a finished run stays
// as it is. An id of another kind of run is refused.
func (s *Service) CancelRun(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*RunView, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("workflow run")
	}
	if _, err := getRunRow(ctx, s.db.R, ws.ID, id); errors.Is(err, apperr.ErrNotFound) {
		if r, err := s.runs.Get(ctx, nil, ws.ID, id); err == nil && r.Kind != runs.KindWorkflow {
			return nil, apperr.BadRequest("run %s is a %s run, not a workflow run", id, r.Kind)
		}
		return nil, err
	} else if err != nil {
		return nil, err
	}
	reason := "cancelled"
	if u != nil {
		reason = "cancelled by user " + u.ID
	}
	r, err := s.engine.Cancel(ctx, nil, ws.ID, id, reason)
	if err != nil {
		return nil, err
	}
	return s.view(ctx, r)
}

// Emit resumes the wait_event nodes of a workspace waiting for the named
// event, with the payload as their output, and reports how many it resumed.
func (s *Service) Emit(ctx context.Context, workspaceID, name string, payload json.RawMessage) (int, error) {
	if name == "" || len(name) > 200 || strings.ContainsRune(name, 0) {
		return 0, apperr.BadRequest("event name must be 1 to 200 characters")
	}
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	if !json.Valid(payload) {
		return 0, apperr.BadRequest("event payload must be JSON")
	}
	runIDs, err := runsWaitingOnEvent(ctx, s.db.R, workspaceID, name)
	if err != nil {
		return 0, err
	}
	var ev any
	_ = json.Unmarshal(payload, &ev) // checked valid above
	n := 0
	for _, runID := range runIDs {
		resumed, err := s.engine.Deliver(ctx, workspaceID, runID, name, ev)
		n += resumed
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// RecentRuns lists a workflow's newest runs (at most limit, 1 to 100).
func (s *Service) RecentRuns(ctx context.Context, ws *actor.Workspace, workflowID string, limit int) ([]RunSummary, error) {
	if _, err := s.Get(ctx, ws, workflowID); err != nil {
		return nil, err
	}
	return newestRuns(ctx, s.db.R, ws.ID, workflowID, min(max(limit, 1), 100))
}
