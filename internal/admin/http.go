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

var tags = []string{"Admin"}

type usersInput struct {
	Limit  int `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset int `query:"offset" minimum:"0" default:"0"`
}

// UsersBody is a page of accounts.
type UsersBody struct {
	Users []auth.Profile `json:"users"`
	Total int            `json:"total"`
}

type usersOutput struct{ Body UsersBody }

type userIDInput struct {
	UserID string `path:"user_id" doc:"Account id"`
}

// Register mounts the users tab's operations.
func Register(api huma.API, s *auth.Service) {
	list := func(pending bool) func(context.Context, *usersInput) (*usersOutput, error) {
		return func(ctx context.Context, in *usersInput) (*usersOutput, error) {
			if _, err := actor.RequireAdmin(ctx); err != nil {
				return nil, err
			}
			users, total, err := s.ListUsers(ctx, pending, in.Limit, in.Offset)
			if err != nil {
				return nil, err
			}
			return &usersOutput{Body: UsersBody{Users: users, Total: total}}, nil
		}
	}
	huma.Register(api, huma.Operation{
		OperationID: "get_api_admin_users_pending", Method: http.MethodGet, Path: "/api/admin/users/pending",
		Summary: "Accounts waiting for approval, oldest first", Tags: tags, Security: httpx.SessionSecurity,
	}, list(true))
	huma.Register(api, huma.Operation{
		OperationID: "get_api_admin_users", Method: http.MethodGet, Path: "/api/admin/users",
		Summary: "All accounts, oldest first", Tags: tags, Security: httpx.SessionSecurity,
	}, list(false))

	huma.Register(api, huma.Operation{
		OperationID: "post_api_admin_users_user_id_approve", Method: http.MethodPost, Path: "/api/admin/users/{user_id}/approve",
		Summary: "Approve an account (safe to repeat)", Tags: tags, Security: httpx.SessionSecurity,
	}, func(ctx context.Context, in *userIDInput) (*auth.ProfileOutput, error) {
		a, err := actor.RequireAdmin(ctx)
		if err != nil {
			return nil, err
		}
		p, err := s.Approve(ctx, a, in.UserID)
		if err != nil {
			return nil, err
		}
		return &auth.ProfileOutput{Body: p}, nil
	})

	huma.Register(api, huma.Operation{
		OperationID: "delete_api_admin_users_user_id_reject", Method: http.MethodDelete, Path: "/api/admin/users/{user_id}/reject",
		Summary:     "Reject an account waiting for approval: deletes it (no undo)",
		Description: "Refused with 409 for an approved account.", Tags: tags, Security: httpx.SessionSecurity,
		Errors: []int{http.StatusNotFound, http.StatusConflict},
	}, func(ctx context.Context, in *userIDInput) (*httpx.DeletedOutput, error) {
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
