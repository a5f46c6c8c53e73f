package errorpages

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

// pageInput is a page as sent: any JSON (the schema is open), checked by
// the service, so that invalid JSON, a value that is not an object and a
// wrong-typed known key all answer 400 bad_request.
type pageInput struct {
	Body json.RawMessage `doc:"The whole page, a JSON object (it replaces the one stored; {} clears it). Known keys: title (string, at most 200 characters), message (string, at most 2000), contact (string, at most 200, shown as text); other keys are kept and not shown. At most 16 KiB of JSON."`
}

const pageDoc = "A JSON object: title, message and contact are shown, other keys are kept as they were sent; {} when none is set."

// Register mounts the active workspace's error page and the instance
// default page (the owner console's error-page tab).
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ws := httpx.Operations{Tags: []string{"Workspaces"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	// A member's PUT is refused before its body is read.
	wsEdit := ws
	wsEdit.Middlewares = huma.Middlewares{scoped, editor(api)}
	workspace := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}

	get := ws.Op("get_api_workspace_error_page", http.MethodGet, "/api/workspace/error-page",
		"The active workspace's App error page ({} when none is set: its apps fall through to the instance default)")
	get.Description = pageDoc
	huma.Register(api, get, func(ctx context.Context, _ *struct{}) (*httpx.Out[json.RawMessage], error) {
		return httpx.Reply(s.Workspace(ctx, workspace(ctx)))
	})
	put := httpx.BodyLimit(wsEdit.Op("put_api_workspace_error_page", http.MethodPut, "/api/workspace/error-page",
		"Replace the active workspace's App error page, no merge; {} clears it (the workspace's owner or admin; audited)"), MaxBodyBytes)
	put.Description = "Answers the page as stored. " + pageDoc
	huma.Register(api, put, func(ctx context.Context, in *pageInput) (*httpx.Out[json.RawMessage], error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		return httpx.Reply(s.SetWorkspace(ctx, workspace(ctx), u, in.Body))
	})

	admin := httpx.Operations{Tags: []string{"Admin"}, Security: httpx.SessionSecurity}
	aget := admin.Op("get_api_admin_error_page", http.MethodGet, "/api/admin/error-page",
		"The instance-default App error page, the last fallback after an App's and its workspace's ({} when none is set)")
	aget.Description = pageDoc
	huma.Register(api, aget, func(ctx context.Context, _ *struct{}) (*httpx.Out[json.RawMessage], error) {
		if _, err := actor.RequireAdmin(ctx); err != nil {
			return nil, err
		}
		return httpx.Reply(s.Instance(ctx))
	})
	aput := httpx.BodyLimit(admin.Op("put_api_admin_error_page", http.MethodPut, "/api/admin/error-page",
		"Replace the instance-default App error page, no merge; {} clears it (instance admins; audited)"), MaxBodyBytes)
	aput.Description = "Answers the page as stored. " + pageDoc
	huma.Register(api, aput, func(ctx context.Context, in *pageInput) (*httpx.Out[json.RawMessage], error) {
		u, err := actor.RequireAdmin(ctx)
		if err != nil {
			return nil, err
		}
		return httpx.Reply(s.SetInstance(ctx, u, in.Body))
	})
}

// editor refuses a caller who may not change the active workspace's page,
// before the body is read (runs after the workspace middleware).
func editor(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(hctx huma.Context, next func(huma.Context)) {
		w, _ := actor.WorkspaceFrom(hctx.Context())
		if err := canEdit(w); err != nil {
			e := httpx.FromError(hctx.Context(), err)
			_ = huma.WriteErr(api, hctx, e.GetStatus(), e.Message, e)
			return
		}
		next(hctx)
	}
}
