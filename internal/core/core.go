// Package core wires the execution core: runs and event logs, the queue
// with the admission of the domains whose work it carries, the dispatcher
// (the hub's side of the worker port), the workflow engine and the domains'
// handlers. The server and the test stacks build it here, so tests run the
// wiring that ships.
package core

import (
	"context"
	"log/slog"

	"slipway/internal/approvals"
	"slipway/internal/conversations"
	"slipway/internal/dispatch"
	"slipway/internal/inbox"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/pubsub"
	"slipway/internal/platform/redact"
	"slipway/internal/projects"
	"slipway/internal/runs"
	"slipway/internal/tasks"
	"slipway/internal/worker"
	"slipway/internal/workflows"
)

// Core is the wired execution core.
type Core struct {
	Runs       *runs.Service
	Queue      *jobs.Queue
	Tasks      *tasks.Service
	Dispatcher *dispatch.Dispatcher
	Workflows  *workflows.Service
	Engine     *workflows.Engine
	// Working with running agents.
	Inbox         *inbox.Inbox
	Approvals     *approvals.Service
	Conversations *conversations.Service
}

// Workspaces is what the core asks about workspaces: who may act in one
// and its autonomy level (tenancy.Access).
type Workspaces interface {
	approvals.Members
	tasks.Autonomy
}

// New wires the core over d. red redacts every stored event; proj is the
// projects service (tasks and workflows live in projects, and a deleted
// project takes them along).
func New(d *db.DB, bus *pubsub.Bus, clk clock.Clock, red *redact.Redactor, proj *projects.Service,
	ws Workspaces, taskCfg tasks.Config, dispCfg dispatch.Config, engCfg workflows.EngineConfig, log *slog.Logger) *Core {
	rs := runs.NewService(d, clk, red)
	q := jobs.New(d, bus, clk, tasks.Limits(taskCfg, proj))
	ts := tasks.NewService(d, clk, proj, rs, q, taskCfg)
	disp := dispatch.New(d, q, rs, bus, dispCfg, log)
	disp.Handle(tasks.JobKind, worker.WorkAgent, ts)

	in := inbox.New(d, bus, clk)
	disp.SetInbox(in)
	ap := approvals.NewService(d, clk, in, ws, taskCfg.ApprovalTimeout, log)
	ap.OnDecided(ts.ApprovalDecided)
	ts.SetInteraction(ap, in, ws)
	conv := conversations.NewService(d, clk, ts, in, rs)

	eng := workflows.NewEngine(d, rs, q, bus, clk, log, engCfg)
	eng.SetAgents(agents{ts, rs, eng})
	wf := workflows.NewService(d, clk, rs, eng, proj)
	ts.OnEnd(agents{ts, rs, eng})
	disp.HandleLocal(workflows.RunJob, eng.Interrupted)
	disp.HandleLocal(workflows.TimerJob, eng.Interrupted)
	disp.Handle(workflows.CodeJob, worker.WorkScript, eng.Code())
	// A deleted project stops its workflow runs before its tasks go.
	proj.OnDelete(wf)
	proj.OnCapChange(wf)
	proj.OnDelete(ts)
	return &Core{Runs: rs, Queue: q, Tasks: ts, Dispatcher: disp, Workflows: wf, Engine: eng, Inbox: in, Approvals: ap, Conversations: conv}
}

// agents lets agent nodes run tasks, and tells the engine when one ends.
type agents struct {
	tasks  *tasks.Service
	runs   *runs.Service
	engine *workflows.Engine
}

func (a agents) StartAgent(ctx context.Context, tx *db.Tx, r workflows.AgentRequest) (string, error) {
	t, err := a.tasks.CreateTx(ctx, tx, r.WorkspaceID, r.CreatedBy, tasks.TaskCreate{ProjectID: r.ProjectID, Title: r.Title, Prompt: r.Prompt,
		AgentProfile: r.Config.AgentType})
	if err != nil {
		return "", err
	}
	return t.ID, nil
}

func (a agents) StopAgent(ctx context.Context, workspaceID, taskID string) error {
	t, err := a.tasks.Get(ctx, &actor.Workspace{ID: workspaceID}, taskID)
	if err != nil || tasks.Terminal(t.Status) {
		return err
	}
	_, err = a.tasks.Cancel(ctx, &actor.Workspace{ID: workspaceID}, taskID, nil)
	return err
}

func (a agents) TaskEnded(ctx context.Context, tx *db.Tx, t *tasks.Task) error {
	end := workflows.TaskEnd{ID: t.ID, WorkspaceID: t.WorkspaceID, Status: t.Status, Error: t.Error, Branch: t.Branch}
	res, err := a.runs.LastResult(ctx, tx, t.WorkspaceID, t.ID)
	if err != nil {
		return err
	}
	end.Result = res
	return a.engine.TaskEnded(ctx, tx, end)
}
