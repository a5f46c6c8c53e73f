package activity

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

type feedInput struct {
	Before string `query:"before" maxLength:"200" doc:"The next of the page before; empty for the newest"`
	Limit  int    `query:"limit" minimum:"1" maximum:"100" default:"50"`
}

// Register mounts the feed; scoped resolves the active workspace.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Activity"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	op := ops.Op("get_api_activity", http.MethodGet, "/api/activity", "What happened in the workspace, newest first")
	op.Description = "Tasks started (with their status now), workflow runs (with theirs) and tool calls decided, each with who did it " +
		"(absent: the system, such as a trigger or a timeout). A page holds at most 100; next leads to the older ones."
	huma.Register(api, op, func(ctx context.Context, in *feedInput) (*httpx.Out[*FeedPage], error) {
		ws, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return httpx.Reply(s.Feed(ctx, ws, in.Before, in.Limit))
	})
}
