package envvars

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

type saveInput struct {
	Body EnvVarSave
}

type listInput struct {
	ProjectID string `query:"project_id" format:"uuid" doc:"Only the globals and this project's env vars"`
}

type idInput struct {
	ID string `path:"id" doc:"Env var id"`
}

// Register mounts the env var operations.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Env vars"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}

	huma.Register(api, ops.Op("post_api_settings_env_vars", http.MethodPost, "/api/settings/env-vars",
		"Create or update an env var, global or a project's (by key in its scope); a secret value is kept in the vault and never returned"),
		func(ctx context.Context, in *saveInput) (*httpx.Out[*EnvVar], error) {
			u, _ := actor.UserFrom(ctx)
			return httpx.Reply(s.Save(ctx, ws(ctx), u, in.Body))
		})
	huma.Register(api, ops.Op("get_api_settings_env_vars", http.MethodGet, "/api/settings/env-vars",
		"The workspace's env vars (at most 1000), globals first, then by project, then by key; a secret's value is \"\""),
		func(ctx context.Context, in *listInput) (*httpx.Out[[]EnvVar], error) {
			return httpx.Reply(s.List(ctx, ws(ctx), in.ProjectID))
		})
	huma.Register(api, ops.Op("delete_api_settings_env_vars_id", http.MethodDelete, "/api/settings/env-vars/{id}",
		"Delete an env var, then its secret value in the vault; {deleted: false} when there was none"),
		func(ctx context.Context, in *idInput) (*httpx.DeletedOutput, error) {
			deleted, err := s.Delete(ctx, ws(ctx), in.ID)
			if err != nil {
				return nil, err
			}
			out := &httpx.DeletedOutput{}
			out.Body.Deleted = deleted
			return out, nil
		})
}
