package tenancy

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

// Headers that select the active workspace and organization.
const (
	WorkspaceHeader    = "X-Workspace-Id"
	OrganizationHeader = "X-Organization-Id"
)

// WorkspaceScoped is the Huma middleware of workspace-scoped operations: it
// resolves the active workspace (X-Workspace-Id, else the caller's default
// joined workspace) and puts it in the context; a workspace the caller has
// not joined is 403. Operations add it with Middlewares.
func (s *Service) WorkspaceScoped(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(hctx huma.Context, next func(huma.Context)) {
		ctx := hctx.Context()
		u, err := actor.RequireApproved(ctx)
		if err == nil {
			var w *actor.Workspace
			if w, err = s.ResolveWorkspace(ctx, u, hctx.Header(WorkspaceHeader)); err == nil {
				next(huma.WithContext(hctx, actor.WithWorkspace(ctx, w)))
				return
			}
		}
		e := httpx.FromError(ctx, err)
		_ = huma.WriteErr(api, hctx, e.GetStatus(), e.Message, e)
	}
}

// SelectorHeaders reads the headers that choose the organization. It is
// exported because Huma only reads fields of exported embedded structs.
type SelectorHeaders struct {
	OrganizationID string `header:"X-Organization-Id" doc:"Organization to act on; default: the active workspace's organization"`
	WorkspaceID    string `header:"X-Workspace-Id" doc:"Active workspace; default: your default joined workspace"`
}

func (in SelectorHeaders) selector() Selector {
	return Selector(in)
}

type renameInput struct {
	SelectorHeaders
	Body struct {
		Name string `json:"name" maxLength:"100"`
	}
}

type createWorkspaceInput struct {
	SelectorHeaders
	Body struct {
		Name           string `json:"name" maxLength:"100"`
		OrganizationID string `json:"organization_id,omitempty" format:"uuid" doc:"Default: the active workspace's organization"`
	}
}

type workspaceIDInput struct {
	ID string `path:"id" doc:"Workspace id"`
}

type autonomyInput struct {
	ID   string `path:"id" doc:"Workspace id"`
	Body Autonomy
}

// Register mounts the organization and workspace operations.
func Register(api huma.API, s *Service) {
	org := httpx.Operations{Tags: []string{"Organization"}, Security: httpx.SessionSecurity}
	huma.Register(api, org.Op("get_organization", http.MethodGet, "/organization", "The active organization"),
		func(ctx context.Context, in *SelectorHeaders) (*httpx.Out[*Organization], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Organization(ctx, u, in.selector()))
		})
	huma.Register(api, org.Op("put_organization", http.MethodPut, "/organization", "Rename the organization (owner or admin)"),
		func(ctx context.Context, in *renameInput) (*httpx.Out[*Organization], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.RenameOrganization(ctx, u, in.selector(), in.Body.Name))
		})

	del := org.Op("delete_organization", http.MethodDelete, "/organization", "Delete the organization (owner only)")
	del.Description = "412 while the organization still owns workspaces or has an active subscription."
	del.Errors = []int{http.StatusForbidden, http.StatusPreconditionFailed}
	huma.Register(api, del, func(ctx context.Context, in *SelectorHeaders) (*httpx.DeletedOutput, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		if err := s.DeleteOrganization(ctx, u, in.selector()); err != nil {
			return nil, err
		}
		return httpx.Deleted(), nil
	})

	huma.Register(api, org.Op("get_organization_members", http.MethodGet, "/organization/members", "Members of the organization"),
		func(ctx context.Context, in *SelectorHeaders) (*httpx.Out[[]Member], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Members(ctx, u, in.selector()))
		})
	huma.Register(api, org.Op("get_organization_summary", http.MethodGet, "/organization/summary", "Counts of members and workspaces"),
		func(ctx context.Context, in *SelectorHeaders) (*httpx.Out[*Summary], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Summary(ctx, u, in.selector()))
		})

	wsOps := httpx.Operations{Tags: []string{"Workspaces"}, Security: httpx.SessionSecurity}
	huma.Register(api, wsOps.Op("get_api_workspaces", http.MethodGet, "/api/workspaces", "Workspaces I have joined"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]Workspace], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Workspaces(ctx, u))
		})
	huma.Register(api, httpx.Created(wsOps.Op("post_api_workspaces", http.MethodPost, "/api/workspaces", "Create a workspace in an organization where I am owner or admin")),
		func(ctx context.Context, in *createWorkspaceInput) (*httpx.Out[*Workspace], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.CreateWorkspace(ctx, u, in.selector(), in.Body.OrganizationID, in.Body.Name))
		})
	autonomy := wsOps
	autonomy.Middlewares = huma.Middlewares{httpx.Approved(api)}
	huma.Register(api, autonomy.Op("get_api_workspaces_id_autonomy", http.MethodGet, "/api/workspaces/{id}/autonomy", "The workspace's autonomy level (any member)"),
		func(ctx context.Context, in *workspaceIDInput) (*httpx.Out[*Autonomy], error) {
			u, _ := actor.UserFrom(ctx)
			return httpx.Reply(s.Autonomy(ctx, u, in.ID))
		})
	huma.Register(api, autonomy.Op("put_api_workspaces_id_autonomy", http.MethodPut, "/api/workspaces/{id}/autonomy", "Set the workspace's autonomy level (its admin, or the organization's owner or admin)"),
		func(ctx context.Context, in *autonomyInput) (*httpx.Out[*Autonomy], error) {
			u, _ := actor.UserFrom(ctx)
			return httpx.Reply(s.SetAutonomy(ctx, u, in.ID, in.Body.Level))
		})
	huma.Register(api, wsOps.Op("delete_api_workspaces_id", http.MethodDelete, "/api/workspaces/{id}", "Delete a workspace (its organization's owner or admin)"),
		func(ctx context.Context, in *workspaceIDInput) (*httpx.DeletedOutput, error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			if err := s.DeleteWorkspace(ctx, u, in.ID); err != nil {
				return nil, err
			}
			return httpx.Deleted(), nil
		})
}
