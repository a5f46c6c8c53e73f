package undo

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

type taskInput struct {
	ID string `path:"id" doc:"Task id"`
}

type createInput struct {
	ID   string `path:"id" doc:"Task id"`
	Body struct {
		Kind string `json:"kind" maxLength:"40" doc:"revert_commit, close_pr or delete_branch"`
	}
}

type idInput struct {
	ID string `path:"id" doc:"Undo action id"`
}

// Register mounts the undo endpoints (active workspace).
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Undo"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}
	huma.Register(api, ops.Op("get_api_tasks_id_undo", http.MethodGet, "/api/tasks/{id}/undo", "The task's undo actions, newest first"),
		func(ctx context.Context, in *taskInput) (*httpx.Out[[]Action], error) {
			return httpx.Reply(s.List(ctx, ws(ctx), in.ID))
		})
	create := httpx.Created(ops.Op("post_api_tasks_id_undo", http.MethodPost, "/api/tasks/{id}/undo", "Undo the task's published work"))
	create.Description = "Kinds: revert_commit (a commit reverting the task's on its branch), close_pr, delete_branch; any other kind 400. " +
		"Only inside the task's undo window after it finished (409 otherwise). The action waits out its grace period, then runs once."
	huma.Register(api, create, func(ctx context.Context, in *createInput) (*httpx.Out[*Action], error) {
		u, _ := actor.UserFrom(ctx)
		return httpx.Reply(s.Create(ctx, ws(ctx), u, in.ID, in.Body.Kind))
	})
	execute := ops.Op("post_api_undo_id_execute", http.MethodPost, "/api/undo/{id}/execute", "Run an undo action now, skipping its grace period")
	execute.Description = "Runs the reversal exactly once: a second execute, or one racing the sweep, is 409."
	huma.Register(api, execute, func(ctx context.Context, in *idInput) (*httpx.Out[*Action], error) {
		return httpx.Reply(s.Execute(ctx, ws(ctx), in.ID))
	})
}
