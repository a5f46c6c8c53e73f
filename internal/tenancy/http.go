package tenancy

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/board"
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

// SelectorHeaders reads the headers that choose the organization.
type SelectorHeaders struct{ httpx.OrgSelector }

func (in SelectorHeaders) selector() Selector { return Selector(in.OrgSelector) }

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

type wsMemberInput struct {
	ID     string `path:"id" doc:"Workspace id"`
	UserID string `path:"user_id" doc:"Account id"`
}

type wsMemberRoleInput struct {
	ID     string `path:"id" doc:"Workspace id"`
	UserID string `path:"user_id" doc:"Account id"`
	Body   struct {
		Role string `json:"role" enum:"owner,admin,member"`
	}
}

type autonomyInput struct {
	ID   string `path:"id" doc:"Workspace id"`
	Body Autonomy
}

// Register mounts the organization and workspace operations.
func Register(api huma.API, s *Service) {
	org := httpx.Operations{Tags: []string{"Organization"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{httpx.Approved(api)}}
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

	registerInvites(api, s)
	registerMembers(api, s)

	wsOps := httpx.Operations{Tags: []string{"Workspaces"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{httpx.Approved(api)}}
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
	huma.Register(api, wsOps.Op("get_api_workspaces_id_autonomy", http.MethodGet, "/api/workspaces/{id}/autonomy", "The workspace's autonomy level (any member)"),
		func(ctx context.Context, in *workspaceIDInput) (*httpx.Out[*Autonomy], error) {
			u, _ := actor.UserFrom(ctx)
			return httpx.Reply(s.Autonomy(ctx, u, in.ID))
		})
	huma.Register(api, wsOps.Op("put_api_workspaces_id_autonomy", http.MethodPut, "/api/workspaces/{id}/autonomy", "Set the workspace's autonomy level (its admin, or the organization's owner or admin)"),
		func(ctx context.Context, in *autonomyInput) (*httpx.Out[*Autonomy], error) {
			u, _ := actor.UserFrom(ctx)
			return httpx.Reply(s.SetAutonomy(ctx, u, in.ID, in.Body.Level))
		})
	huma.Register(api, wsOps.Op("get_api_workspaces_id_members", http.MethodGet, "/api/workspaces/{id}/members", "Members of a workspace with their roles"),
		func(ctx context.Context, in *workspaceIDInput) (*httpx.Out[[]WorkspaceMember], error) {
			u, _ := actor.UserFrom(ctx)
			return httpx.Reply(s.WorkspaceMembers(ctx, u, in.ID))
		})
	setMember := wsOps.Op("put_api_workspaces_id_members_user_id", http.MethodPut, "/api/workspaces/{id}/members/{user_id}", "Add a member of the organization to the workspace, or change their role")
	setMember.Description = "Workspace owners and the organization's owners and admins manage every role; workspace admins manage admins and members. The last owner is not demoted."
	huma.Register(api, setMember, func(ctx context.Context, in *wsMemberRoleInput) (*httpx.Out[*WorkspaceMember], error) {
		u, _ := actor.UserFrom(ctx)
		return httpx.Reply(s.SetWorkspaceMember(ctx, u, in.ID, in.UserID, in.Body.Role))
	})
	huma.Register(api, wsOps.Op("delete_api_workspaces_id_members_user_id", http.MethodDelete, "/api/workspaces/{id}/members/{user_id}", "Remove someone from the workspace (or leave it)"),
		func(ctx context.Context, in *wsMemberInput) (*httpx.DeletedOutput, error) {
			u, _ := actor.UserFrom(ctx)
			if err := s.RemoveWorkspaceMember(ctx, u, in.ID, in.UserID); err != nil {
				return nil, err
			}
			return httpx.Deleted(), nil
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

type inviteInput struct {
	SelectorHeaders
	Body InviteInput
}

type bulkInviteInput struct {
	SelectorHeaders
	Body BulkInviteInput
}

type inviteIDInput struct {
	SelectorHeaders
	ID string `path:"id" doc:"Invite id"`
}

type acceptInput struct {
	Body struct {
		Token string `json:"token" maxLength:"200" doc:"The invite's token"`
	}
}

// BulkVerdicts is the answer of a bulk invite.
type BulkVerdicts struct {
	Results []BulkVerdict `json:"results" doc:"One per address, in the order given"`
}

func registerInvites(api huma.API, s *Service) {
	ops := httpx.Operations{Tags: []string{"Organization"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{httpx.Approved(api)}}
	user := func(ctx context.Context) *actor.User {
		u, _ := actor.UserFrom(ctx) // the middleware guarantees one
		return u
	}
	huma.Register(api, ops.Op("get_organization_invites", http.MethodGet, "/organization/invites", "Pending invites, newest first (owner or admin; never their tokens)"),
		func(ctx context.Context, in *SelectorHeaders) (*httpx.Out[[]Invite], error) {
			return httpx.Reply(s.Invites(ctx, user(ctx), in.selector()))
		})
	create := httpx.Created(ops.Op("post_organization_invites", http.MethodPost, "/organization/invites", "Invite an email address (owner or admin)"))
	create.Description = "The token is in this answer only (and in the invite mail); it is single-use and expires. 409 for a member or an address already invited."
	huma.Register(api, create, func(ctx context.Context, in *inviteInput) (*httpx.Out[*IssuedInvite], error) {
		return httpx.Reply(s.CreateInvite(ctx, user(ctx), in.selector(), in.Body))
	})
	huma.Register(api, ops.Op("post_organization_invites_bulk", http.MethodPost, "/organization/invites/bulk", "Invite several addresses: a verdict per address"),
		func(ctx context.Context, in *bulkInviteInput) (*httpx.Out[BulkVerdicts], error) {
			vs, err := s.BulkInvite(ctx, user(ctx), in.selector(), in.Body)
			return httpx.Reply(BulkVerdicts{Results: vs}, err)
		})
	huma.Register(api, ops.Op("delete_organization_invites_id", http.MethodDelete, "/organization/invites/{id}", "Revoke a pending invite"),
		func(ctx context.Context, in *inviteIDInput) (*httpx.DeletedOutput, error) {
			if err := s.RevokeInvite(ctx, user(ctx), in.selector(), in.ID); err != nil {
				return nil, err
			}
			return httpx.Deleted(), nil
		})
	huma.Register(api, ops.Op("post_organization_invites_id_resend", http.MethodPost, "/organization/invites/{id}/resend", "A new token and expiry for a pending invite (the old token stops working)"),
		func(ctx context.Context, in *inviteIDInput) (*httpx.Out[*IssuedInvite], error) {
			return httpx.Reply(s.ResendInvite(ctx, user(ctx), in.selector(), in.ID))
		})
	accept := httpx.Operations{Tags: []string{"Organization"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{httpx.SignedIn(api)}}.
		Op("post_organization_invites_accept", http.MethodPost, "/organization/invites/accept", "Accept an invite with the invited account")
	accept.Description = "The signed-in account's email must be the invited address (403 otherwise); an unknown, used or expired token is 400. " +
		"Joins the organization and the invite's workspaces; an account not yet approved stays pending until an instance admin approves it."
	huma.Register(api, accept, func(ctx context.Context, in *acceptInput) (*httpx.Out[*Accepted], error) {
		return httpx.Reply(s.AcceptInvite(ctx, user(ctx), in.Body.Token))
	})
}

type memberInput struct {
	SelectorHeaders
	UserID string `path:"user_id" doc:"Member's account id"`
}

type roleInput struct {
	SelectorHeaders
	UserID string `path:"user_id" doc:"Member's account id"`
	Body   struct {
		Role string `json:"role" enum:"owner,admin,member"`
	}
}

type transferInput struct {
	SelectorHeaders
	Body struct {
		UserID string `json:"user_id" format:"uuid" doc:"The member who becomes an owner; you become an admin"`
	}
}

type membersBoardInput struct {
	SelectorHeaders
	MembersBoardInput
}

func registerMembers(api huma.API, s *Service) {
	ops := httpx.Operations{Tags: []string{"Organization"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{httpx.Approved(api)}}
	user := func(ctx context.Context) *actor.User {
		u, _ := actor.UserFrom(ctx) // the middleware guarantees one
		return u
	}
	const base = "/organization/members/{user_id}"
	huma.Register(api, ops.Op("get_api_organization_members_board", http.MethodGet, "/api/organization/members/board", "A page of members with role and status facets"),
		func(ctx context.Context, in *membersBoardInput) (*httpx.Out[*board.Board[MemberView]], error) {
			return httpx.Reply(s.MembersBoard(ctx, user(ctx), in.selector(), in.MembersBoardInput))
		})
	offboard := ops.Op("delete_organization_members_user_id", http.MethodDelete, base, "Offboard a member (or leave)")
	offboard.Description = "Removes every workspace membership in the organization and revokes the person's sessions. Owners and admins offboard; a member may leave; the last owner cannot."
	huma.Register(api, offboard, func(ctx context.Context, in *memberInput) (*httpx.DeletedOutput, error) {
		if err := s.Offboard(ctx, user(ctx), in.selector(), in.UserID); err != nil {
			return nil, err
		}
		return httpx.Deleted(), nil
	})
	huma.Register(api, ops.Op("get_organization_members_user_id_audit", http.MethodGet, base+"/audit", "Changes to a member, newest first (owner or admin)"),
		func(ctx context.Context, in *memberInput) (*httpx.Out[[]audit.Entry], error) {
			return httpx.Reply(s.MemberAudit(ctx, user(ctx), in.selector(), in.UserID))
		})
	huma.Register(api, ops.Op("post_organization_members_user_id_suspend", http.MethodPost, base+"/suspend", "Suspend a member: no access to the organization until reactivated"),
		func(ctx context.Context, in *memberInput) (*httpx.Out[*MemberView], error) {
			return httpx.Reply(s.Suspend(ctx, user(ctx), in.selector(), in.UserID))
		})
	huma.Register(api, ops.Op("post_organization_members_user_id_reactivate", http.MethodPost, base+"/reactivate", "End a member's suspension"),
		func(ctx context.Context, in *memberInput) (*httpx.Out[*MemberView], error) {
			return httpx.Reply(s.Reactivate(ctx, user(ctx), in.selector(), in.UserID))
		})
	huma.Register(api, ops.Op("put_organization_members_user_id_role", http.MethodPut, base+"/role", "Change a member's role"),
		func(ctx context.Context, in *roleInput) (*httpx.Out[*MemberView], error) {
			return httpx.Reply(s.SetRole(ctx, user(ctx), in.selector(), in.UserID, in.Body.Role))
		})
	huma.Register(api, ops.Op("get_organization_members_user_id_workspaces", http.MethodGet, base+"/workspaces", "A member's workspaces in the organization"),
		func(ctx context.Context, in *memberInput) (*httpx.Out[[]Workspace], error) {
			return httpx.Reply(s.MemberWorkspaces(ctx, user(ctx), in.selector(), in.UserID))
		})
	huma.Register(api, ops.Op("post_organization_transfer_ownership", http.MethodPost, "/organization/transfer-ownership", "Make a member an owner; you become an admin (owner only)"),
		func(ctx context.Context, in *transferInput) (*httpx.Out[*Organization], error) {
			return httpx.Reply(s.TransferOwnership(ctx, user(ctx), in.selector(), in.Body.UserID))
		})
}
