package templates

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

type instantiateInput struct {
	Slug string `path:"slug" maxLength:"100" doc:"The template's slug"`
	Body InstantiateInput
}

// Register mounts the template operations. Register them before the
// workflow operations: the earlier registration wins the paths the
// layered mux shares (POST /api/workflows/templates/{slug} and
// POST /api/workflows/{id}/runs both match /api/workflows/templates/runs).
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Workflow templates"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}

	huma.Register(api, ops.Op("get_api_workflows_templates", http.MethodGet, "/api/workflows/templates", "The shipped workflow templates"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]Template], error) {
			return httpx.Reply(s.List())
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_workflows_templates_slug", http.MethodPost, "/api/workflows/templates/{slug}",
		"Create a workflow from a template in a project, with its triggers (a webhook's token and receiver URL are shown once)")),
		func(ctx context.Context, in *instantiateInput) (*httpx.Out[*Instance], error) {
			ws, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
			u, _ := actor.UserFrom(ctx)
			return httpx.Reply(s.Instantiate(ctx, ws, u, in.Slug, in.Body))
		})
}
