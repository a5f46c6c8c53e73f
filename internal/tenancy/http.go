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

type orgOutput struct{ Body *Organization }

type renameInput struct {
	SelectorHeaders
	Body struct {
		Name string `json:"name" maxLength:"100"`
	}
}

type membersOutput struct{ Body []Member }

type summaryOutput struct{ Body *Summary }

type workspacesOutput struct{ Body []Workspace }

type createWorkspaceInput struct {
	SelectorHeaders
	Body struct {
		Name           string `json:"name" maxLength:"100"`
		OrganizationID string `json:"organization_id,omitempty" format:"uuid" doc:"Default: the active workspace's organization"`
	}
}

type workspaceOutput struct{ Body *Workspace }

type workspaceIDInput struct {
	ID string `path:"id" doc:"Workspace id"`
}

// Register mounts the organization and workspace operations.
func Register(api huma.API, s *Service) {
	tags := []string{"Organization"}
	huma.Register(api, huma.Operation{
		OperationID: "get_organization", Method: http.MethodGet, Path: "/organization",
		Summary: "The active organization", Tags: tags, Security: httpx.SessionSecurity,
	}, func(ctx context.Context, in *SelectorHeaders) (*orgOutput, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		o, err := s.Organization(ctx, u, in.selector())
		if err != nil {
			return nil, err
		}
		return &orgOutput{Body: o}, nil
	})

	huma.Register(api, huma.Operation{
		OperationID: "put_organization", Method: http.MethodPut, Path: "/organization",
		Summary: "Rename the organization (owner or admin)", Tags: tags, Security: httpx.SessionSecurity,
	}, func(ctx context.Context, in *renameInput) (*orgOutput, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		o, err := s.RenameOrganization(ctx, u, in.selector(), in.Body.Name)
		if err != nil {
			return nil, err
		}
		return &orgOutput{Body: o}, nil
	})

	huma.Register(api, huma.Operation{
		OperationID: "delete_organization", Method: http.MethodDelete, Path: "/organization",
		Summary: "Delete the organization (owner only)", Tags: tags, Security: httpx.SessionSecurity,
		Description: "412 while the organization still owns workspaces or has an active subscription.",
		Errors:      []int{http.StatusForbidden, http.StatusPreconditionFailed},
	}, func(ctx context.Context, in *SelectorHeaders) (*httpx.DeletedOutput, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		if err := s.DeleteOrganization(ctx, u, in.selector()); err != nil {
			return nil, err
		}
		return httpx.Deleted(), nil
	})

	huma.Register(api, huma.Operation{
		OperationID: "get_organization_members", Method: http.MethodGet, Path: "/organization/members",
		Summary: "Members of the organization", Tags: tags, Security: httpx.SessionSecurity,
	}, func(ctx context.Context, in *SelectorHeaders) (*membersOutput, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		ms, err := s.Members(ctx, u, in.selector())
		if err != nil {
			return nil, err
		}
		return &membersOutput{Body: ms}, nil
	})

	huma.Register(api, huma.Operation{
		OperationID: "get_organization_summary", Method: http.MethodGet, Path: "/organization/summary",
		Summary: "Counts of members and workspaces", Tags: tags, Security: httpx.SessionSecurity,
	}, func(ctx context.Context, in *SelectorHeaders) (*summaryOutput, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		sum, err := s.Summary(ctx, u, in.selector())
		if err != nil {
			return nil, err
		}
		return &summaryOutput{Body: sum}, nil
	})

	wsTags := []string{"Workspaces"}
	huma.Register(api, huma.Operation{
		OperationID: "get_api_workspaces", Method: http.MethodGet, Path: "/api/workspaces",
		Summary: "Workspaces I have joined", Tags: wsTags, Security: httpx.SessionSecurity,
	}, func(ctx context.Context, _ *struct{}) (*workspacesOutput, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		ws, err := s.Workspaces(ctx, u)
		if err != nil {
			return nil, err
		}
		return &workspacesOutput{Body: ws}, nil
	})

	huma.Register(api, huma.Operation{
		OperationID: "post_api_workspaces", Method: http.MethodPost, Path: "/api/workspaces",
		Summary: "Create a workspace in an organization where I am owner or admin", Tags: wsTags, Security: httpx.SessionSecurity,
		DefaultStatus: http.StatusCreated,
	}, func(ctx context.Context, in *createWorkspaceInput) (*workspaceOutput, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		w, err := s.CreateWorkspace(ctx, u, in.selector(), in.Body.OrganizationID, in.Body.Name)
		if err != nil {
			return nil, err
		}
		return &workspaceOutput{Body: w}, nil
	})

	huma.Register(api, huma.Operation{
		OperationID: "delete_api_workspaces_id", Method: http.MethodDelete, Path: "/api/workspaces/{id}",
		Summary: "Delete a workspace (its organization's owner or admin)", Tags: wsTags, Security: httpx.SessionSecurity,
	}, func(ctx context.Context, in *workspaceIDInput) (*httpx.DeletedOutput, error) {
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
