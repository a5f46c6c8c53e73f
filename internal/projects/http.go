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

type projectOutput struct{ Body *Project }

type projectsOutput struct{ Body []Project }

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

type boardOutput struct{ Body *board.Board[Project] }

type profileIDInput struct {
	ID string `path:"id" doc:"Agent profile id"`
}

type profileOutput struct{ Body *AgentProfile }

type profilesOutput struct{ Body []AgentProfile }

type profileCreateInput struct{ Body ProfileInput }

type profileUpdateInput struct {
	ID   string `path:"id"`
	Body ProfileInput
}

// Register mounts the project and agent profile operations. scoped is the
// workspace-resolving middleware (tenancy.WorkspaceScoped).
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	mw := huma.Middlewares{scoped}
	tags := []string{"Projects"}
	op := func(id, method, path, summary string) huma.Operation {
		return huma.Operation{OperationID: id, Method: method, Path: path, Summary: summary, Tags: tags,
			Security: httpx.SessionSecurity, Middlewares: mw}
	}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}

	huma.Register(api, op("get_api_projects", http.MethodGet, "/api/projects", "Projects of the active workspace"),
		func(ctx context.Context, _ *struct{}) (*projectsOutput, error) {
			ps, err := s.List(ctx, ws(ctx))
			if err != nil {
				return nil, err
			}
			return &projectsOutput{Body: ps}, nil
		})

	create := op("post_api_projects", http.MethodPost, "/api/projects", "Create a project bound to a git repository")
	create.DefaultStatus = http.StatusCreated
	huma.Register(api, create, func(ctx context.Context, in *createInput) (*projectOutput, error) {
		p, err := s.Create(ctx, ws(ctx), in.Body)
		if err != nil {
			return nil, err
		}
		return &projectOutput{Body: p}, nil
	})

	huma.Register(api, op("get_api_projects_board", http.MethodGet, "/api/projects/board", "A page of projects with facets"),
		func(ctx context.Context, in *BoardInput) (*boardOutput, error) {
			b, err := s.Board(ctx, ws(ctx), *in)
			if err != nil {
				return nil, err
			}
			return &boardOutput{Body: b}, nil
		})

	huma.Register(api, op("get_api_projects_id", http.MethodGet, "/api/projects/{id}", "A project"),
		func(ctx context.Context, in *idInput) (*projectOutput, error) {
			p, err := s.Get(ctx, ws(ctx), in.ID)
			if err != nil {
				return nil, err
			}
			return &projectOutput{Body: p}, nil
		})

	huma.Register(api, op("put_api_projects_id", http.MethodPut, "/api/projects/{id}", "Change a project (absent fields stay)"),
		func(ctx context.Context, in *updateInput) (*projectOutput, error) {
			p, err := s.Update(ctx, ws(ctx), in.ID, in.Body)
			if err != nil {
				return nil, err
			}
			return &projectOutput{Body: p}, nil
		})

	huma.Register(api, op("delete_api_projects_id", http.MethodDelete, "/api/projects/{id}", "Delete a project with its tasks (refused while any runs)"),
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
		huma.Register(api, op(a.id, http.MethodPost, a.path, a.summary),
			func(ctx context.Context, in *idInput) (*projectOutput, error) {
				p, err := s.SetArchived(ctx, ws(ctx), in.ID, a.archived)
				if err != nil {
					return nil, err
				}
				return &projectOutput{Body: p}, nil
			})
	}

	huma.Register(api, op("patch_api_projects_id_concurrency", http.MethodPatch, "/api/projects/{id}/concurrency", "Set max_concurrent_runs"),
		func(ctx context.Context, in *concurrencyInput) (*projectOutput, error) {
			p, err := s.SetConcurrency(ctx, ws(ctx), in.ID, in.Body.MaxConcurrentRuns)
			if err != nil {
				return nil, err
			}
			return &projectOutput{Body: p}, nil
		})

	ptags := []string{"Agent profiles"}
	pop := func(id, method, path, summary string) huma.Operation {
		o := op(id, method, path, summary)
		o.Tags = ptags
		return o
	}
	huma.Register(api, pop("get_api_agent_profiles", http.MethodGet, "/api/agent-profiles", "Agent profiles of the active workspace"),
		func(ctx context.Context, _ *struct{}) (*profilesOutput, error) {
			ps, err := s.Profiles(ctx, ws(ctx))
			if err != nil {
				return nil, err
			}
			return &profilesOutput{Body: ps}, nil
		})
	pcreate := pop("post_api_agent_profiles", http.MethodPost, "/api/agent-profiles", "Create an agent profile")
	pcreate.DefaultStatus = http.StatusCreated
	huma.Register(api, pcreate, func(ctx context.Context, in *profileCreateInput) (*profileOutput, error) {
		p, err := s.CreateProfile(ctx, ws(ctx), in.Body)
		if err != nil {
			return nil, err
		}
		return &profileOutput{Body: p}, nil
	})
	huma.Register(api, pop("get_api_agent_profiles_id", http.MethodGet, "/api/agent-profiles/{id}", "An agent profile"),
		func(ctx context.Context, in *profileIDInput) (*profileOutput, error) {
			p, err := s.GetProfile(ctx, ws(ctx), in.ID)
			if err != nil {
				return nil, err
			}
			return &profileOutput{Body: p}, nil
		})
	huma.Register(api, pop("put_api_agent_profiles_id", http.MethodPut, "/api/agent-profiles/{id}", "Change an agent profile (absent fields stay)"),
		func(ctx context.Context, in *profileUpdateInput) (*profileOutput, error) {
			p, err := s.UpdateProfile(ctx, ws(ctx), in.ID, in.Body)
			if err != nil {
				return nil, err
			}
			return &profileOutput{Body: p}, nil
		})
	huma.Register(api, pop("delete_api_agent_profiles_id", http.MethodDelete, "/api/agent-profiles/{id}", "Delete an agent profile"),
		func(ctx context.Context, in *profileIDInput) (*httpx.DeletedOutput, error) {
			if err := s.DeleteProfile(ctx, ws(ctx), in.ID); err != nil {
				return nil, err
			}
			return httpx.Deleted(), nil
		})
}
