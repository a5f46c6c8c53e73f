package audit

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/board"
	"slipway/internal/platform/httpx"
)

// Register mounts the owner console's audit board. The log is read-only
// here: there is no operation to edit, delete or expire entries.
func Register(api huma.API, l *Log) {
	ops := httpx.Operations{Tags: []string{"Admin"}, Security: httpx.SessionSecurity}
	op := ops.Op("get_api_admin_audit_board", http.MethodGet, "/api/admin/audit/board",
		"The append-only audit log as a board: search, sort, pages, action and target kind facets (instance admins)")
	op.Description = "Sort keys: created_at (default, newest first), action, target (kind, then id). " +
		"q matches the action, the target kind, the target id and the actor's email."
	huma.Register(api, op, func(ctx context.Context, in *BoardInput) (*httpx.Out[*board.Board[AuditEntry]], error) {
		if _, err := actor.RequireAdmin(ctx); err != nil {
			return nil, err
		}
		return httpx.Reply(l.Board(ctx, *in))
	})
}
