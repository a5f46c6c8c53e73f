// Package admin mounts the instance owner console's operations under
// /api/admin/. The whole tree sits behind auth.AdminLayer, and every handler
// here checks again (approved, then admin) before doing anything.
package admin

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/auth"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

type usersInput struct {
	Limit  int `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset int `query:"offset" minimum:"0" default:"0"`
}

// UsersBody is a page of accounts.
type UsersBody struct {
	Users []auth.Profile `json:"users"`
	Total int            `json:"total"`
}

// PendingUser is an account waiting for approval, with the organizations
// that invited its address.
type PendingUser struct {
	auth.Profile
	InvitedBy []string `json:"invited_by" doc:"Names of the organizations that invited this address (an invite joins, approval stays here)"`
}

// PendingBody is a page of accounts waiting for approval.
type PendingBody struct {
	Users []PendingUser `json:"users"`
	Total int           `json:"total"`
}

// Invitations names the organizations that invited addresses (tenancy).
type Invitations interface {
	InvitingOrganizations(ctx context.Context, emails []string) (map[string][]string, error)
}

type userIDInput struct {
	UserID string `path:"user_id" doc:"Account id"`
}

// Register mounts the users tab's, the features tab's and the seo tab's
// operations.
func Register(api huma.API, s *auth.Service, inv Invitations, features *Features, seo *SEO) {
	ops := httpx.Operations{Tags: []string{"Admin"}, Security: httpx.SessionSecurity}
	registerFeatures(api, ops, features)
	registerSEO(api, ops, seo)
	huma.Register(api, ops.Op("get_api_admin_users_pending", http.MethodGet, "/api/admin/users/pending", "Accounts waiting for approval, oldest first"),
		func(ctx context.Context, in *usersInput) (*httpx.Out[PendingBody], error) {
			if _, err := actor.RequireAdmin(ctx); err != nil {
				return nil, err
			}
			users, total, err := s.ListUsers(ctx, true, in.Limit, in.Offset)
			if err != nil {
				return nil, err
			}
			emails := make([]string, len(users))
			for i, u := range users {
				emails[i] = u.Email
			}
			by, err := inv.InvitingOrganizations(ctx, emails)
			out := PendingBody{Users: make([]PendingUser, len(users)), Total: total}
			for i, u := range users {
				out.Users[i] = PendingUser{Profile: u, InvitedBy: by[u.Email]}
				if out.Users[i].InvitedBy == nil {
					out.Users[i].InvitedBy = []string{}
				}
			}
			return httpx.Reply(out, err)
		})
	huma.Register(api, ops.Op("get_api_admin_users", http.MethodGet, "/api/admin/users", "All accounts, oldest first"),
		func(ctx context.Context, in *usersInput) (*httpx.Out[UsersBody], error) {
			if _, err := actor.RequireAdmin(ctx); err != nil {
				return nil, err
			}
			users, total, err := s.ListUsers(ctx, false, in.Limit, in.Offset)
			return httpx.Reply(UsersBody{Users: users, Total: total}, err)
		})
	huma.Register(api, ops.Op("post_api_admin_users_user_id_approve", http.MethodPost, "/api/admin/users/{user_id}/approve", "Approve an account (safe to repeat)"),
		func(ctx context.Context, in *userIDInput) (*httpx.Out[auth.Profile], error) {
			a, err := actor.RequireAdmin(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Approve(ctx, a, in.UserID))
		})

	reject := ops.Op("delete_api_admin_users_user_id_reject", http.MethodDelete, "/api/admin/users/{user_id}/reject",
		"Reject an account waiting for approval: deletes it (no undo)")
	reject.Description = "Refused with 409 for an approved account."
	reject.Errors = []int{http.StatusNotFound, http.StatusConflict}
	huma.Register(api, reject, func(ctx context.Context, in *userIDInput) (*httpx.DeletedOutput, error) {
		a, err := actor.RequireAdmin(ctx)
		if err != nil {
			return nil, err
		}
		if err := s.Reject(ctx, a, in.UserID); err != nil {
			return nil, err
		}
		return httpx.Deleted(), nil
	})
}
