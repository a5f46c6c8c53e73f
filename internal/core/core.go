// Package core wires the execution core: runs and event logs, the queue
// with the admission of the domains whose work it carries, the dispatcher
// (the hub's side of the worker port) and the domains' handlers. The server
// and the test stacks build it here, so tests run the wiring that ships.
package core

import (
	"log/slog"

	"slipway/internal/dispatch"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/pubsub"
	"slipway/internal/platform/redact"
	"slipway/internal/projects"
	"slipway/internal/runs"
	"slipway/internal/tasks"
	"slipway/internal/worker"
)

// Core is the wired execution core.
type Core struct {
	Runs       *runs.Service
	Queue      *jobs.Queue
	Tasks      *tasks.Service
	Dispatcher *dispatch.Dispatcher
}

// New wires the core over d. red redacts every stored event; proj is the
// projects service (tasks run on projects, and a deleted project takes its
// tasks along).
func New(d *db.DB, bus *pubsub.Bus, clk clock.Clock, red *redact.Redactor, proj *projects.Service,
	taskCfg tasks.Config, dispCfg dispatch.Config, log *slog.Logger) *Core {
	rs := runs.NewService(d, clk, red)
	q := jobs.New(d, bus, clk, tasks.Limits(taskCfg, proj))
	ts := tasks.NewService(d, clk, proj, rs, q, taskCfg)
	proj.OnDelete(ts)
	disp := dispatch.New(d, q, rs, bus, dispCfg, log)
	disp.Handle(tasks.JobKind, worker.WorkAgent, ts)
	return &Core{Runs: rs, Queue: q, Tasks: ts, Dispatcher: disp}
}
