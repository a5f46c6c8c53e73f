package n8nimport

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

type importInput struct {
	ProjectID string `query:"project_id" required:"true" doc:"The project the workflow joins"`
	RawBody   []byte `contentType:"application/json" doc:"The n8n workflow export (the JSON n8n's editor downloads)"`
}

// Register mounts the import operation. Register it before the workflow
// operations: the earlier registration wins the paths the layered mux
// shares.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Workflows"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	op := httpx.Created(ops.Op("post_api_workflows_import_n8n", http.MethodPost, "/api/workflows/import/n8n",
		"Create a workflow from an n8n workflow export, with its webhook and schedule triggers and the conversion warnings"))
	op = httpx.BodyLimit(op, MaxDocumentBytes)
	op.SkipValidateBody = true // the raw body is n8n's document, read by Convert
	huma.Register(api, op, func(ctx context.Context, in *importInput) (*httpx.Out[*N8nImport], error) {
		ws, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		u, _ := actor.UserFrom(ctx)
		return httpx.Reply(s.Import(ctx, ws, u, in.ProjectID, in.RawBody))
	})
}
