package runs

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/board"
	"slipway/internal/platform/httpx"
)

// List is a page of runs.
type RunList struct {
	Runs  []Run `json:"runs"`
	Total int   `json:"total"`
}

type listInput struct{ Filter }

type idInput struct {
	ID string `path:"id" doc:"Run id"`
}

// EventsInput pages through an event log (tasks use it too).
type EventsInput struct {
	ID            string `path:"id"`
	AfterSequence int32  `query:"after_sequence" minimum:"0" maximum:"2147483647" doc:"Return events after this sequence number"`
	Limit         int64  `query:"limit" minimum:"1" maximum:"1000" default:"500"`
}

// Register mounts the run operations; scoped resolves the active workspace.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Runs"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}
	huma.Register(api, ops.Op("get_api_runs", http.MethodGet, "/api/runs", "Runs, newest first (top-level unless include_children)"),
		func(ctx context.Context, in *listInput) (*httpx.Out[RunList], error) {
			rs, total, err := s.List(ctx, ws(ctx), in.Filter)
			return httpx.Reply(RunList{Runs: rs, Total: total}, err)
		})
	huma.Register(api, ops.Op("get_api_runs_board", http.MethodGet, "/api/runs/board", "A page of runs with status and kind facets"),
		func(ctx context.Context, in *BoardInput) (*httpx.Out[*board.Board[Run]], error) {
			return httpx.Reply(s.Board(ctx, ws(ctx), *in))
		})
	huma.Register(api, ops.Op("get_api_runs_id", http.MethodGet, "/api/runs/{id}", "A run with its descendant tree"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*RunTree], error) {
			return httpx.Reply(s.Tree(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("get_api_runs_id_events", http.MethodGet, "/api/runs/{id}/events", "A run's events in sequence order"),
		func(ctx context.Context, in *EventsInput) (*httpx.Out[[]TaskEvent], error) {
			return httpx.Reply(s.Events(ctx, ws(ctx), in.ID, in.AfterSequence, int(in.Limit)))
		})
}
