package backlog

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

type projectInput struct {
	ID string `path:"id" doc:"Project id"`
}

type boardInput struct {
	ID    string `path:"id" doc:"Project id"`
	Limit int    `query:"limit" minimum:"1" maximum:"200" default:"50" doc:"Cards shown per column (the first by priority; total says how many it has)"`
}

type itemInput struct {
	ID     string `path:"id" doc:"Project id"`
	ItemID string `path:"item_id" doc:"Backlog item id"`
}

type patchInput struct {
	ID     string `path:"id"`
	ItemID string `path:"item_id"`
	Body   ItemPatch
}

type orderInput struct {
	ID   string `path:"id"`
	Body OrderInput
}

type scanInput struct {
	ID     string `path:"id"`
	DryRun bool   `query:"dry_run" default:"true" doc:"true (the default): answer what would change and write nothing"`
}

// Register mounts the backlog under its projects; scoped is the
// workspace-resolving middleware (any member reads and steers).
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Backlog"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	who := func(ctx context.Context) (*actor.Workspace, *actor.User) {
		w, _ := actor.WorkspaceFrom(ctx)
		u, _ := actor.UserFrom(ctx)
		return w, u
	}
	huma.Register(api, ops.Op("get_api_projects_id_backlog", http.MethodGet, "/api/projects/{id}/backlog", "The project's backlog at a glance: cards by column"),
		func(ctx context.Context, in *projectInput) (*httpx.Out[*Status], error) {
			w, _ := who(ctx)
			return httpx.Reply(s.Status(ctx, w, in.ID))
		})
	huma.Register(api, ops.Op("get_api_projects_id_backlog_board", http.MethodGet, "/api/projects/{id}/backlog/board",
		"The backlog board: each column's first cards by priority, its total, and the moves a member may make"),
		func(ctx context.Context, in *boardInput) (*httpx.Out[*Board], error) {
			w, _ := who(ctx)
			return httpx.Reply(s.Board(ctx, w, in.ID, in.Limit))
		})
	huma.Register(api, ops.Op("get_api_projects_id_backlog_items_item_id", http.MethodGet, "/api/projects/{id}/backlog/items/{item_id}",
		"A card: its issue's body (cut near 4000 characters), the tasks dispatched for it (newest first), its latest routing decision and its gates"),
		func(ctx context.Context, in *itemInput) (*httpx.Out[*ItemDetail], error) {
			w, _ := who(ctx)
			return httpx.Reply(s.Item(ctx, w, in.ID, in.ItemID))
		})
	huma.Register(api, ops.Op("patch_api_projects_id_backlog_items_item_id", http.MethodPatch, "/api/projects/{id}/backlog/items/{item_id}",
		"Steer a card: a move within the allowlist (422 otherwise; to done only with its gates green) and/or a priority; audited and published"),
		func(ctx context.Context, in *patchInput) (*httpx.Out[*Item], error) {
			w, u := who(ctx)
			return httpx.Reply(s.Patch(ctx, w, u, in.ID, in.ItemID, in.Body))
		})
	huma.Register(api, ops.Op("patch_api_projects_id_backlog_order", http.MethodPatch, "/api/projects/{id}/backlog/order",
		"Reorder cards: a plan of {item_id, priority} applied in one transaction (a card not the project's 404, a done card 422, nothing changed)"),
		func(ctx context.Context, in *orderInput) (*httpx.Out[*OrderResult], error) {
			w, u := who(ctx)
			return httpx.Reply(s.Order(ctx, w, u, in.ID, in.Body))
		})
	huma.Register(api, ops.Op("post_api_projects_id_backlog_scan", http.MethodPost, "/api/projects/{id}/backlog/scan",
		"Read the repository's open issues into the backlog: new ones to the inbox, closed ones off the board (dry_run, the default, writes nothing)"),
		func(ctx context.Context, in *scanInput) (*httpx.Out[*ScanResult], error) {
			w, u := who(ctx)
			return httpx.Reply(s.Scan(ctx, w, u, in.ID, in.DryRun))
		})
}
