package projects

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/board"
	"slipway/internal/platform/httpx"
)

type idInput struct {
	ID string `path:"id" doc:"Project id"`
}

type createInput struct{ Body ProjectCreate }

type updateInput struct {
	ID   string `path:"id"`
	Body ProjectUpdate
}

type concurrencyInput struct {
	ID   string `path:"id"`
	Body struct {
		MaxConcurrentRuns *int `json:"max_concurrent_runs" required:"true" nullable:"true" minimum:"1" doc:"null means unlimited"`
	}
}

type profileIDInput struct {
	ID string `path:"id" doc:"Agent profile id"`
}

type profileCreateInput struct{ Body ProfileInput }

type profileUpdateInput struct {
	ID   string `path:"id"`
	Body ProfileInput
}

// Register mounts the project and agent profile operations. scoped is the
// workspace-resolving middleware (tenancy.WorkspaceScoped).
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Projects"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}

	huma.Register(api, ops.Op("get_api_projects", http.MethodGet, "/api/projects", "Projects of the active workspace"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]Project], error) {
			return httpx.Reply(s.List(ctx, ws(ctx)))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_projects", http.MethodPost, "/api/projects", "Create a project bound to a git repository")),
		func(ctx context.Context, in *createInput) (*httpx.Out[*Project], error) {
			return httpx.Reply(s.Create(ctx, ws(ctx), in.Body))
		})
	huma.Register(api, ops.Op("get_api_projects_board", http.MethodGet, "/api/projects/board", "A page of projects with facets"),
		func(ctx context.Context, in *BoardInput) (*httpx.Out[*board.Board[Project]], error) {
			return httpx.Reply(s.Board(ctx, ws(ctx), *in))
		})
	huma.Register(api, ops.Op("get_api_projects_id", http.MethodGet, "/api/projects/{id}", "A project"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*Project], error) {
			return httpx.Reply(s.Get(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("put_api_projects_id", http.MethodPut, "/api/projects/{id}", "Change a project (absent fields stay)"),
		func(ctx context.Context, in *updateInput) (*httpx.Out[*Project], error) {
			return httpx.Reply(s.Update(ctx, ws(ctx), in.ID, in.Body))
		})
	del := ops.Op("delete_api_projects_id", http.MethodDelete, "/api/projects/{id}", "Delete a project with its tasks (refused while any runs)")
	del.Description = "Deletes the project and everything that belongs to it: its tasks with their runs, event logs and approvals, " +
		"its workflows with their triggers and runs. Refused with 409 while any of its tasks runs. " +
		"The repository itself is not touched. To keep the history, archive the project instead."
	huma.Register(api, del,
		func(ctx context.Context, in *idInput) (*httpx.DeletedOutput, error) {
			if err := s.Delete(ctx, ws(ctx), in.ID); err != nil {
				return nil, err
			}
			return httpx.Deleted(), nil
		})

	for _, a := range []struct {
		id, path, summary string
		archived          bool
	}{
		{"post_api_projects_id_archive", "/api/projects/{id}/archive", "Archive a project (sets archived_at)", true},
		{"post_api_projects_id_restore", "/api/projects/{id}/restore", "Restore an archived project (clears archived_at)", false},
	} {
		huma.Register(api, ops.Op(a.id, http.MethodPost, a.path, a.summary),
			func(ctx context.Context, in *idInput) (*httpx.Out[*Project], error) {
				return httpx.Reply(s.SetArchived(ctx, ws(ctx), in.ID, a.archived))
			})
	}

	huma.Register(api, ops.Op("patch_api_projects_id_concurrency", http.MethodPatch, "/api/projects/{id}/concurrency", "Set max_concurrent_runs"),
		func(ctx context.Context, in *concurrencyInput) (*httpx.Out[*Project], error) {
			return httpx.Reply(s.SetConcurrency(ctx, ws(ctx), in.ID, in.Body.MaxConcurrentRuns))
		})

	profiles := httpx.Operations{Tags: []string{"Agent profiles"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	huma.Register(api, profiles.Op("get_api_agent_profiles", http.MethodGet, "/api/agent-profiles", "Agent profiles of the active workspace"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]AgentProfile], error) {
			return httpx.Reply(s.Profiles(ctx, ws(ctx)))
		})
	huma.Register(api, httpx.Created(profiles.Op("post_api_agent_profiles", http.MethodPost, "/api/agent-profiles", "Create an agent profile")),
		func(ctx context.Context, in *profileCreateInput) (*httpx.Out[*AgentProfile], error) {
			return httpx.Reply(s.CreateProfile(ctx, ws(ctx), in.Body))
		})
	huma.Register(api, profiles.Op("get_api_agent_profiles_id", http.MethodGet, "/api/agent-profiles/{id}", "An agent profile"),
		func(ctx context.Context, in *profileIDInput) (*httpx.Out[*AgentProfile], error) {
			return httpx.Reply(s.GetProfile(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, profiles.Op("put_api_agent_profiles_id", http.MethodPut, "/api/agent-profiles/{id}", "Change an agent profile (absent fields stay)"),
		func(ctx context.Context, in *profileUpdateInput) (*httpx.Out[*AgentProfile], error) {
			return httpx.Reply(s.UpdateProfile(ctx, ws(ctx), in.ID, in.Body))
		})
	huma.Register(api, profiles.Op("delete_api_agent_profiles_id", http.MethodDelete, "/api/agent-profiles/{id}", "Delete an agent profile"),
		func(ctx context.Context, in *profileIDInput) (*httpx.DeletedOutput, error) {
			if err := s.DeleteProfile(ctx, ws(ctx), in.ID); err != nil {
				return nil, err
			}
			return httpx.Deleted(), nil
		})
}
