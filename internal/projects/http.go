package projects

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/forge"
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

type syncListInput struct{ Body SyncListInput }

type syncImportInput struct{ Body SyncImportInput }

// AutomationOutput is 201 for a webhook installed now, 200 for the one
// the project has.
type AutomationOutput struct {
	Status int
	Body   *Automation
}

type hookInput struct {
	Token   string `path:"token" maxLength:"200" doc:"The receiver token in the URL Slipway installed on the forge"`
	RawBody []byte `contentType:"application/json"`
	header  http.Header
}

// Resolve keeps the delivery's headers (the forge's signature, event and
// delivery id).
func (in *hookInput) Resolve(ctx huma.Context) []error {
	in.header = http.Header{}
	ctx.EachHeader(func(name, value string) { in.header.Add(name, value) })
	return nil
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

	huma.Register(api, ops.Op("post_api_projects_sync_list", http.MethodPost, "/api/projects/sync_list",
		"The repositories a forge resource can see, with the projects already made from them"),
		func(ctx context.Context, in *syncListInput) (*httpx.Out[*SyncList], error) {
			return httpx.Reply(s.SyncList(ctx, ws(ctx), in.Body))
		})
	huma.Register(api, ops.Op("post_api_projects_sync_import", http.MethodPost, "/api/projects/sync_import",
		"Make a project of each named repository of a forge (one transaction each; a repository imported before answers its project)"),
		func(ctx context.Context, in *syncImportInput) (*httpx.Out[*SyncImport], error) {
			return httpx.Reply(s.SyncImport(ctx, ws(ctx), in.Body))
		})
	huma.Register(api, ops.Op("post_api_projects_id_automation_setup", http.MethodPost, "/api/projects/{id}/automation_setup",
		"Install the project's webhook on its forge (pull requests, issues, checks): 201 when installed now, 200 with the one it has"),
		func(ctx context.Context, in *idInput) (*AutomationOutput, error) {
			u, _ := actor.UserFrom(ctx)
			a, created, err := s.AutomationSetup(ctx, ws(ctx), u, in.ID)
			if err != nil {
				return nil, err
			}
			status := http.StatusOK
			if created {
				status = http.StatusCreated
			}
			return &AutomationOutput{Status: status, Body: a}, nil
		})
	huma.Register(api, ops.Op("get_api_projects_id_automations", http.MethodGet, "/api/projects/{id}/automations", "What is installed on the project's forge"),
		func(ctx context.Context, in *idInput) (*httpx.Out[[]Automation], error) {
			return httpx.Reply(s.Automations(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("get_api_projects_id_issues", http.MethodGet, "/api/projects/{id}/issues",
		"The open issues of the project's repository on its forge, oldest first (409 for a local project)"),
		func(ctx context.Context, in *idInput) (*httpx.Out[[]forge.Issue], error) {
			return httpx.Reply(s.Issues(ctx, ws(ctx), in.ID))
		})

	receive := httpx.BodyLimit(httpx.Operations{Tags: []string{"Projects"}}.Op("post_api_forge_hooks_token", http.MethodPost, "/api/forge/hooks/{token}",
		"A forge's webhook delivery to a project's automation: signed as the forge signs (401 otherwise); a delivery id seen before is acknowledged and does nothing"),
		MaxDeliveryBytes)
	receive.SkipValidateBody = true
	huma.Register(api, receive, func(ctx context.Context, in *hookInput) (*httpx.Out[*DeliveryAck], error) {
		return httpx.Reply(s.Deliver(ctx, in.Token, in.header, in.RawBody))
	})

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
