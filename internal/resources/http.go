package resources

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/board"
	"slipway/internal/platform/httpx"
)

type listInput struct {
	Kind string `query:"kind" maxLength:"40" doc:"Only resources of this kind"`
}

type boardInput struct {
	board.Query
	Kind string `query:"kind" maxLength:"40" doc:"Only resources of this kind"`
}

type idInput struct {
	ID string `path:"id" doc:"Resource id"`
}

type createInput struct {
	Body ResourceCreate
}

type updateInput struct {
	ID   string `path:"id" doc:"Resource id"`
	Body ResourceUpdate
}

type concurrencyInput struct {
	ID   string `path:"id" doc:"Resource id"`
	Body ResourceConcurrency
}

// Register mounts the resource operations.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Resources"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}

	huma.Register(api, httpx.Operations{Tags: []string{"Resources"}, Security: httpx.SessionSecurity}.Op("get_api_resource_kinds", http.MethodGet, "/api/resource-kinds",
		"The resource kinds, each with the JSON Schema of its config"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]ResourceKind], error) {
			if _, err := actor.RequireApproved(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(Kinds(), nil)
		})
	huma.Register(api, ops.Op("get_api_resources", http.MethodGet, "/api/resources", "The workspace's resources by name (never a secret: has_secret says whether one is stored)"),
		func(ctx context.Context, in *listInput) (*httpx.Out[[]Resource], error) {
			return httpx.Reply(s.List(ctx, ws(ctx), in.Kind))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_resources", http.MethodPost, "/api/resources",
		"Add a resource; its secret is stored in the vault and never returned")),
		func(ctx context.Context, in *createInput) (*httpx.Out[*Resource], error) {
			u, _ := actor.UserFrom(ctx)
			return httpx.Reply(s.Create(ctx, ws(ctx), u, in.Body))
		})
	huma.Register(api, ops.Op("get_api_resources_board", http.MethodGet, "/api/resources/board", "Resources as a board: search, sort, pages, a kind facet"),
		func(ctx context.Context, in *boardInput) (*httpx.Out[*board.Board[Resource]], error) {
			return httpx.Reply(s.Board(ctx, ws(ctx), in.Query, in.Kind))
		})
	huma.Register(api, ops.Op("get_api_resources_usage", http.MethodGet, "/api/resources/usage", "Each resource with the workflows whose nodes name it"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]ResourceUsage], error) {
			return httpx.Reply(s.Usage(ctx, ws(ctx)))
		})
	huma.Register(api, ops.Op("get_api_resources_id", http.MethodGet, "/api/resources/{id}", "A resource"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*Resource], error) {
			return httpx.Reply(s.Get(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("put_api_resources_id", http.MethodPut, "/api/resources/{id}",
		"Change a resource: absent fields stay; secret absent leaves it, \"\" clears it, a value replaces it"),
		func(ctx context.Context, in *updateInput) (*httpx.Out[*Resource], error) {
			return httpx.Reply(s.Update(ctx, ws(ctx), in.ID, in.Body))
		})
	huma.Register(api, ops.Op("delete_api_resources_id", http.MethodDelete, "/api/resources/{id}",
		"Delete a resource, then its secret in the vault; {deleted: false} when there was none"),
		func(ctx context.Context, in *idInput) (*httpx.DeletedOutput, error) {
			deleted, err := s.Delete(ctx, ws(ctx), in.ID)
			if err != nil {
				return nil, err
			}
			out := &httpx.DeletedOutput{}
			out.Body.Deleted = deleted
			return out, nil
		})
	huma.Register(api, ops.Op("patch_api_resources_id_concurrency", http.MethodPatch, "/api/resources/{id}/concurrency",
		"Set how many runs may use the resource at once (null: unlimited)"),
		func(ctx context.Context, in *concurrencyInput) (*httpx.Out[*Resource], error) {
			return httpx.Reply(s.SetConcurrency(ctx, ws(ctx), in.ID, in.Body.MaxConcurrentUses))
		})
	huma.Register(api, ops.Op("get_api_resources_id_usage", http.MethodGet, "/api/resources/{id}/usage", "The workflows whose nodes name the resource"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*ResourceUsage], error) {
			return httpx.Reply(s.UsageOf(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("post_api_resources_id_test", http.MethodPost, "/api/resources/{id}/test",
		"Test the connection with the stored secret: ok false with the reason when the far end cannot be reached or refuses; 400 for a config that cannot work"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*ResourceTest], error) {
			return httpx.Reply(s.Test(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("get_api_resources_id_discord_channels", http.MethodGet, "/api/resources/{id}/discord/channels",
		"A discord resource's bot: its guilds with their text and announcement channels (400 for another kind or a refused token)"),
		func(ctx context.Context, in *idInput) (*httpx.Out[[]ResourceGuild], error) {
			return httpx.Reply(s.DiscordChannels(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("get_api_resources_id_storage_folders", http.MethodGet, "/api/resources/{id}/storage/folders",
		"A seafile_webdav resource's share: the sub-folders of a folder (400 for another kind, a path with .. or refused credentials)"),
		func(ctx context.Context, in *foldersInput) (*httpx.Out[[]ResourceFolder], error) {
			return httpx.Reply(s.StorageFolders(ctx, ws(ctx), in.ID, in.Path))
		})
	huma.Register(api, ops.Op("post_api_resources_id_rls_refresh", http.MethodPost, "/api/resources/{id}/rls_refresh",
		"Provision the workspace's role, schema and row-level security policies in a postgresql resource with rls_managed (400 otherwise)"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*RLSStatus], error) {
			return httpx.Reply(s.RLSRefresh(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("get_api_resources_id_rls_status", http.MethodGet, "/api/resources/{id}/rls_status",
		"What row-level security provisioned for the resource: unprovisioned (null fields), provisioned or failed"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*RLSStatus], error) {
			return httpx.Reply(s.RLSStatusOf(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("get_api_db_namespaces", http.MethodGet, "/api/db-namespaces",
		"The workspace's schemas in database resources with row-level security: handle (the resource's name) and schema, no secrets"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]DBNamespace], error) {
			return httpx.Reply(s.Namespaces(ctx, ws(ctx)))
		})
}

type foldersInput struct {
	ID   string `path:"id" doc:"Resource id"`
	Path string `query:"path" maxLength:"1024" doc:"The folder, from the share's root (default the root); no . or .. segments"`
}
