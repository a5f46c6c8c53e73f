package scripts

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/board"
	"slipway/internal/platform/httpx"
)

type idInput struct {
	ID string `path:"id" doc:"Script id"`
}

type createInput struct{ Body ScriptCreate }

type patchInput struct {
	ID   string `path:"id" doc:"Script id"`
	Body ScriptPatch
}

type revisionInput struct {
	ID      string `path:"id" doc:"Script id"`
	Version int64  `path:"version" minimum:"1" maximum:"9007199254740991" doc:"ScriptRevision number"`
}

type runInput struct {
	ID   string `path:"id" doc:"Script id"`
	Body *ScriptRunInput
}

// maxBody lets a script of the largest size through even when JSON escapes
// most of its characters (a control character takes six bytes escaped).
const maxBody = 2 << 20

func bigBody(op huma.Operation) huma.Operation {
	return httpx.BodyLimit(op, maxBody)
}

// Register mounts the script operations; scoped resolves the active
// workspace.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Scripts"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}
	user := func(ctx context.Context) *actor.User {
		u, _ := actor.UserFrom(ctx)
		return u
	}

	huma.Register(api, ops.Op("get_api_scripts", http.MethodGet, "/api/scripts", "Scripts of the workspace, newest first, without their sources"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]ScriptSummary], error) {
			return httpx.Reply(s.List(ctx, ws(ctx)))
		})
	huma.Register(api, bigBody(httpx.Created(ops.Op("post_api_scripts", http.MethodPost, "/api/scripts", "Create a script (its revision 1)"))),
		func(ctx context.Context, in *createInput) (*httpx.Out[*Script], error) {
			return httpx.Reply(s.Create(ctx, ws(ctx), user(ctx), in.Body))
		})
	huma.Register(api, ops.Op("get_api_scripts_board", http.MethodGet, "/api/scripts/board", "A page of scripts with a language facet"),
		func(ctx context.Context, in *BoardInput) (*httpx.Out[*board.Board[ScriptSummary]], error) {
			return httpx.Reply(s.Board(ctx, ws(ctx), *in))
		})
	huma.Register(api, ops.Op("get_api_scripts_id", http.MethodGet, "/api/scripts/{id}", "A script with its source"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*Script], error) {
			return httpx.Reply(s.Get(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, bigBody(ops.Op("patch_api_scripts_id", http.MethodPatch, "/api/scripts/{id}",
		"Change a script's fields; a new source or language adds a revision")),
		func(ctx context.Context, in *patchInput) (*httpx.Out[*Script], error) {
			return httpx.Reply(s.Update(ctx, ws(ctx), user(ctx), in.ID, in.Body))
		})
	huma.Register(api, ops.Op("delete_api_scripts_id", http.MethodDelete, "/api/scripts/{id}",
		"Delete a script with its revisions (400 while a workflow's code node runs it)"),
		func(ctx context.Context, in *idInput) (*httpx.DeletedOutput, error) {
			ok, err := s.Delete(ctx, ws(ctx), in.ID)
			if err != nil {
				return nil, err
			}
			out := httpx.Deleted()
			out.Body.Deleted = ok
			return out, nil
		})
	run := ops.Op("post_api_scripts_id_run", http.MethodPost, "/api/scripts/{id}/run",
		"Run the script's current revision on its own, through a worker (202: the run starts when a worker takes it)")
	run.DefaultStatus = http.StatusAccepted
	huma.Register(api, run, func(ctx context.Context, in *runInput) (*httpx.Out[*ScriptRunStarted], error) {
		var body ScriptRunInput
		if in.Body != nil {
			body = *in.Body
		}
		return httpx.Reply(s.Run(ctx, ws(ctx), in.ID, body))
	})
	huma.Register(api, ops.Op("get_api_scripts_id_runs", http.MethodGet, "/api/scripts/{id}/runs", "A script's recent runs, newest first"),
		func(ctx context.Context, in *idInput) (*httpx.Out[[]ScriptRun], error) {
			return httpx.Reply(s.Runs(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("get_api_scripts_id_revisions", http.MethodGet, "/api/scripts/{id}/revisions", "A script's revisions, newest first, without sources"),
		func(ctx context.Context, in *idInput) (*httpx.Out[[]ScriptRevisionSummary], error) {
			return httpx.Reply(s.Revisions(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("get_api_scripts_id_revisions_version", http.MethodGet, "/api/scripts/{id}/revisions/{version}", "One revision with its source"),
		func(ctx context.Context, in *revisionInput) (*httpx.Out[*ScriptRevision], error) {
			return httpx.Reply(s.Revision(ctx, ws(ctx), in.ID, in.Version))
		})
}
