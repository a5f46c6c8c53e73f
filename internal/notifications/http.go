package notifications

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/board"
	"slipway/internal/platform/httpx"
)

type settingsInput struct {
	Body Settings
}

type idInput struct {
	ID string `path:"id" doc:"Notification id"`
}

// ReadAllOutput says how many notifications were marked read.
type ReadAllOutput struct {
	Body struct {
		Marked int `json:"marked" doc:"How many unread notifications were marked read"`
	}
}

// Register mounts the caller's notifications: those of the active
// workspace and those about their account. The spec lists the group
// without /api (GET /notifications…) besides GET /api/notifications/board.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Notifications"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	who := func(ctx context.Context) (*actor.User, *actor.Workspace, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, nil, err
		}
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return u, w, nil
	}

	huma.Register(api, ops.Op("get_api_notifications_settings", http.MethodGet, "/api/notifications/settings",
		"My notification settings: whether notifications are also mailed"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[*Settings], error) {
			u, _, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Settings(ctx, u))
		})
	huma.Register(api, ops.Op("put_api_notifications_settings", http.MethodPut, "/api/notifications/settings",
		"Save my notification settings (mail: off, decisions or all; at most 20 mails an hour, the rest wait in the inbox)"),
		func(ctx context.Context, in *settingsInput) (*httpx.Out[*Settings], error) {
			u, _, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.SaveSettings(ctx, u, in.Body))
		})

	list := ops.Op("get_notifications", http.MethodGet, "/notifications", "The caller's notifications, newest first, with counts by source")
	list.Description = "Those of the active workspace and those about the caller's account (an invite). `facets.source` counts each " +
		"source (every source listed), `facets.unread` the unread ones; `total` is how many match the filters."
	huma.Register(api, list, func(ctx context.Context, in *Query) (*httpx.Out[*Page], error) {
		u, w, err := who(ctx)
		if err != nil {
			return nil, err
		}
		return httpx.Reply(s.List(ctx, u, w, *in))
	})
	huma.Register(api, ops.Op("get_api_notifications_board", http.MethodGet, "/api/notifications/board",
		"The caller's notifications as a board: newest first, q searches titles, chips by source and by state"),
		func(ctx context.Context, in *BoardQuery) (*httpx.Out[*board.Board[Notification]], error) {
			u, w, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Board(ctx, u, w, *in))
		})
	huma.Register(api, ops.Op("post_notifications_read_all", http.MethodPost, "/notifications/read-all",
		"Mark every unread notification of the caller's read (the active workspace's and the account's)"),
		func(ctx context.Context, _ *struct{}) (*ReadAllOutput, error) {
			u, w, err := who(ctx)
			if err != nil {
				return nil, err
			}
			n, err := s.ReadAll(ctx, u, w)
			if err != nil {
				return nil, err
			}
			out := &ReadAllOutput{}
			out.Body.Marked = n
			return out, nil
		})
	del := ops.Op("delete_notifications_id", http.MethodDelete, "/notifications/{id}", "Delete one of the caller's notifications")
	del.Description = "`{deleted: false}` when there was none: an unknown id, and another person's, alike."
	huma.Register(api, del, func(ctx context.Context, in *idInput) (*httpx.DeletedOutput, error) {
		u, w, err := who(ctx)
		if err != nil {
			return nil, err
		}
		deleted, err := s.Delete(ctx, u, w, in.ID)
		if err != nil {
			return nil, err
		}
		out := &httpx.DeletedOutput{}
		out.Body.Deleted = deleted
		return out, nil
	})
	read := ops.Op("put_notifications_id_read", http.MethodPut, "/notifications/{id}/read", "Mark one of the caller's notifications read")
	read.Description = "Idempotent: marking it again keeps the first read time. Another person's is 404, like an unknown id."
	huma.Register(api, read, func(ctx context.Context, in *idInput) (*httpx.Out[*Notification], error) {
		u, w, err := who(ctx)
		if err != nil {
			return nil, err
		}
		return httpx.Reply(s.MarkRead(ctx, u, w, in.ID))
	})
}
