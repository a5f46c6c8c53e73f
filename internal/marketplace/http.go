package marketplace

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

type idInput struct {
	ID string `path:"id" maxLength:"64"`
}

type sourceCreateInput struct{ Body SourceCreate }

type sourcePatchInput struct {
	ID   string `path:"id" maxLength:"64"`
	Body SourcePatch
}

type itemsInput struct {
	Q        string `query:"q" maxLength:"200" doc:"Words of the name, slug, summary or tags"`
	Kind     string `query:"kind" enum:"bundle,node,script,app"`
	SourceID string `query:"source_id" maxLength:"64"`
	Price    string `query:"price" enum:"free,paid"`
	Limit    int    `query:"limit" minimum:"0" doc:"Default 50, at most 200"`
	Offset   int    `query:"offset" minimum:"0" maximum:"100000"`
}

type versionInput struct {
	ID      string `path:"id" maxLength:"64"`
	Version string `path:"version" maxLength:"50"`
}

type previewInput struct {
	ID      string `path:"id" maxLength:"64"`
	Version string `query:"version" maxLength:"50" doc:"Default the latest"`
}

type installInput struct {
	ID      string `path:"id" maxLength:"64"`
	Version string `path:"version" maxLength:"50"`
	Body    *InstallInput
}

type updateInput struct {
	ID   string `path:"id" maxLength:"64"`
	Body *InstallUpdate
}

type autoUpdateInput struct {
	ID   string `path:"id" maxLength:"64"`
	Body AutoUpdateInput
}

type reviewInput struct {
	ID   string `path:"id" maxLength:"64"`
	Body *ReviewInput
}

type publishScriptInput struct{ Body PublishScript }

type publishBundleInput struct{ Body PublishBundle }

type publishAppInput struct{ Body PublishApp }

type publishNodeInput struct{ Body PublishNode }

type rateInput struct {
	ID   string `path:"id" maxLength:"64"`
	Body RatingInput
}

type ratingsInput struct {
	ID     string `path:"id" maxLength:"64"`
	Limit  int    `query:"limit" minimum:"0" doc:"Default 50, at most 200"`
	Offset int    `query:"offset" minimum:"0" maximum:"100000"`
}

// InstallOutput answers an install: 201 when it made the install, 200
// when the version was installed already.
type InstallOutput struct {
	Status int
	Body   *MarketInstall
}

// Register mounts the catalog (the active workspace's view) and the
// instance admins' review operations.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Marketplace"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	who := func(ctx context.Context) (*actor.User, *actor.Workspace, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, nil, err
		}
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return u, w, nil
	}

	huma.Register(api, ops.Op("get_api_marketplace_sources", http.MethodGet, "/api/marketplace/sources",
		"The official source and the active workspace's own"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]MarketSource], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Sources(ctx, ws))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_marketplace_sources", http.MethodPost, "/api/marketplace/sources",
		"Add a source (workspace admins): the workspace's own, of its published items, with the workspaces it grants them to; or a Git repository of published items (synced at once)")),
		func(ctx context.Context, in *sourceCreateInput) (*httpx.Out[*MarketSource], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.CreateSource(ctx, ws, u, in.Body))
		})
	huma.Register(api, ops.Op("patch_api_marketplace_sources_id", http.MethodPatch, "/api/marketplace/sources/{id}",
		"Rename, enable, disable or change the grants of a source (workspace admins; the official source is read-only)"),
		func(ctx context.Context, in *sourcePatchInput) (*httpx.Out[*MarketSource], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.UpdateSource(ctx, ws, u, in.ID, in.Body))
		})
	huma.Register(api, ops.Op("delete_api_marketplace_sources_id", http.MethodDelete, "/api/marketplace/sources/{id}",
		"Delete a source (409 while it has published items, or a Git source's items are installed; the official source is read-only)"),
		func(ctx context.Context, in *idInput) (*httpx.DeletedOutput, error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			if _, err := s.DeleteSource(ctx, ws, u, in.ID); err != nil {
				return nil, err
			}
			return httpx.Deleted(), nil
		})
	huma.Register(api, ops.Op("post_api_marketplace_sources_id_sync", http.MethodPost, "/api/marketplace/sources/{id}/sync",
		"Read a source again (the official one: the items this server ships; a Git source: its repository, versions that do not match their digests refused)"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*MarketSource], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.SyncSource(ctx, ws, u, in.ID))
		})

	huma.Register(api, httpx.Created(ops.Op("post_api_marketplace_scripts_publish", http.MethodPost, "/api/marketplace/scripts/publish",
		"Publish a script of the workspace as a new version of its item (workspace admins; semver, higher than every earlier version)")),
		func(ctx context.Context, in *publishScriptInput) (*httpx.Out[*Published], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.PublishScript(ctx, ws, u, in.Body))
		})

	huma.Register(api, httpx.Created(ops.Op("post_api_marketplace_nodes_publish", http.MethodPost, "/api/marketplace/nodes/publish",
		"Publish a node type of the workspace, with its script, as a new version of its item (workspace admins)")),
		func(ctx context.Context, in *publishNodeInput) (*httpx.Out[*Published], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.PublishNode(ctx, ws, u, in.Body))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_marketplace_bundles_publish", http.MethodPost, "/api/marketplace/bundles/publish",
		"Publish workflows of the workspace, with the scripts, node types and code files they use, as a new version of a bundle (workspace admins)")),
		func(ctx context.Context, in *publishBundleInput) (*httpx.Out[*Published], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.PublishBundle(ctx, ws, u, in.Body))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_marketplace_publish", http.MethodPost, "/api/marketplace/publish",
		"Publish an app of the workspace as a source listing: its manifest and files, as a new version of its item (workspace admins)")),
		func(ctx context.Context, in *publishAppInput) (*httpx.Out[*Published], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.PublishApp(ctx, ws, u, in.Body))
		})
	huma.Register(api, ops.Op("get_api_marketplace_items", http.MethodGet, "/api/marketplace/items",
		"The items the workspace sees, newest first: the official ones, the verified ones, its own and those granted to it"),
		func(ctx context.Context, in *itemsInput) (*httpx.Out[*MarketItemPage], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Items(ctx, ws, in.Q, in.Kind, in.SourceID, in.Price, in.Limit, in.Offset))
		})
	huma.Register(api, ops.Op("get_api_marketplace_items_id", http.MethodGet, "/api/marketplace/items/{id}", "An item"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*MarketItem], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Item(ctx, ws, in.ID))
		})
	huma.Register(api, ops.Op("get_api_marketplace_items_id_versions", http.MethodGet, "/api/marketplace/items/{id}/versions",
		"An item's versions, newest first, each with its manifest: objects, files with their digests, capabilities"),
		func(ctx context.Context, in *idInput) (*httpx.Out[[]ItemVersion], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Versions(ctx, ws, in.ID))
		})
	huma.Register(api, ops.Op("get_api_marketplace_items_id_versions_version", http.MethodGet, "/api/marketplace/items/{id}/versions/{version}",
		"One version of an item"),
		func(ctx context.Context, in *versionInput) (*httpx.Out[*ItemVersion], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Version(ctx, ws, in.ID, in.Version))
		})
	huma.Register(api, ops.Op("get_api_marketplace_items_id_review", http.MethodGet, "/api/marketplace/items/{id}/review",
		"The item's latest review verdict (null when none): the verdict, its reason and when"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*ItemVerdict], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.ItemReview(ctx, ws, in.ID))
		})
	huma.Register(api, ops.Op("get_api_marketplace_items_id_preview_script", http.MethodGet, "/api/marketplace/items/{id}/preview/script",
		"A script item's script, as an install would make it"),
		func(ctx context.Context, in *previewInput) (*httpx.Out[*ScriptContent], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.PreviewScript(ctx, ws, in.ID, in.Version))
		})
	huma.Register(api, ops.Op("get_api_marketplace_items_id_preview_node", http.MethodGet, "/api/marketplace/items/{id}/preview/node",
		"A node item's node type and script, as an install would make them"),
		func(ctx context.Context, in *previewInput) (*httpx.Out[*NodePreview], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.PreviewNode(ctx, ws, in.ID, in.Version))
		})
	huma.Register(api, ops.Op("get_api_marketplace_items_id_preview_graph", http.MethodGet, "/api/marketplace/items/{id}/preview/graph",
		"A bundle's workflows as graphs, and what they need bound"),
		func(ctx context.Context, in *previewInput) (*httpx.Out[*BundleGraph], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.PreviewGraph(ctx, ws, in.ID, in.Version))
		})
	huma.Register(api, ops.Op("get_api_marketplace_items_id_files", http.MethodGet, "/api/marketplace/items/{id}/files",
		"A version's files with their digests and contents (the latest unless ?version=; a paid item's need a license)"),
		func(ctx context.Context, in *previewInput) (*httpx.Out[[]VersionFile], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Files(ctx, ws, in.ID, in.Version))
		})
	huma.Register(api, ops.Op("post_api_marketplace_items_id_versions_version_install_preview", http.MethodPost,
		"/api/marketplace/items/{id}/versions/{version}/install_preview", "What installing the version would make (a dry run)"),
		func(ctx context.Context, in *versionInput) (*httpx.Out[*InstallPreview], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.InstallPreview(ctx, ws, in.ID, in.Version))
		})
	install := ops.Op("post_api_marketplace_items_id_versions_version_install", http.MethodPost, "/api/marketplace/items/{id}/versions/{version}/install",
		"Install the version (workspace admins): its objects made in one transaction, pinned to its digest; 200 when installed already")
	install.DefaultStatus = http.StatusCreated
	huma.Register(api, install, func(ctx context.Context, in *installInput) (*InstallOutput, error) {
		u, ws, err := who(ctx)
		if err != nil {
			return nil, err
		}
		var body InstallInput
		if in.Body != nil {
			body = *in.Body
		}
		inst, created, err := s.Install(ctx, ws, u, in.ID, in.Version, body)
		if err != nil {
			return nil, err
		}
		if created {
			return &InstallOutput{Status: http.StatusCreated, Body: inst}, nil
		}
		return &InstallOutput{Status: http.StatusOK, Body: inst}, nil
	})
	huma.Register(api, ops.Op("get_api_marketplace_installs", http.MethodGet, "/api/marketplace/installs", "The workspace's installs, newest first"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]MarketInstall], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Installs(ctx, ws))
		})
	huma.Register(api, ops.Op("post_api_marketplace_installs_id_update_preview", http.MethodPost, "/api/marketplace/installs/{id}/update_preview",
		"What updating the install would change: each file's diff and the capability diff (a dry run)"),
		func(ctx context.Context, in *updateInput) (*httpx.Out[*UpdatePreview], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			var body InstallUpdate
			if in.Body != nil {
				body = *in.Body
			}
			return httpx.Reply(s.UpdatePreview(ctx, ws, in.ID, body))
		})
	huma.Register(api, ops.Op("post_api_marketplace_installs_id_update", http.MethodPost, "/api/marketplace/installs/{id}/update",
		"Update the install (workspace admins): to the latest version within its range, or the one named"),
		func(ctx context.Context, in *updateInput) (*httpx.Out[*MarketInstall], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			var body InstallUpdate
			if in.Body != nil {
				body = *in.Body
			}
			return httpx.Reply(s.Update(ctx, ws, u, in.ID, body))
		})
	huma.Register(api, ops.Op("post_api_marketplace_installs_id_auto_update", http.MethodPost, "/api/marketplace/installs/{id}/auto_update",
		"Arm or disarm auto-update (workspace admins): versions within the range apply by themselves unless their capabilities grew"),
		func(ctx context.Context, in *autoUpdateInput) (*httpx.Out[*MarketInstall], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.SetAutoUpdate(ctx, ws, u, in.ID, in.Body))
		})

	huma.Register(api, ops.Op("put_api_marketplace_items_id_rating", http.MethodPut, "/api/marketplace/items/{id}/rating",
		"Rate an item the workspace installed (1 to 5 stars, a comment)"),
		func(ctx context.Context, in *rateInput) (*httpx.Out[*Rating], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Rate(ctx, ws, u, in.ID, in.Body))
		})
	huma.Register(api, ops.Op("delete_api_marketplace_items_id_rating", http.MethodDelete, "/api/marketplace/items/{id}/rating", "Remove my rating"),
		func(ctx context.Context, in *idInput) (*httpx.DeletedOutput, error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			ok, err := s.Unrate(ctx, ws, u, in.ID)
			if err != nil {
				return nil, err
			}
			out := httpx.Deleted()
			out.Body.Deleted = ok
			return out, nil
		})
	huma.Register(api, ops.Op("get_api_marketplace_items_id_rating_mine", http.MethodGet, "/api/marketplace/items/{id}/rating/mine",
		"My rating of an item (null when none)"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*Rating], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.MyRating(ctx, ws, u, in.ID))
		})
	huma.Register(api, ops.Op("get_api_marketplace_items_id_ratings", http.MethodGet, "/api/marketplace/items/{id}/ratings",
		"An item's ratings, newest first, with their total"),
		func(ctx context.Context, in *ratingsInput) (*httpx.Out[*RatingPage], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Ratings(ctx, ws, in.ID, in.Limit, in.Offset))
		})

	admin := httpx.Operations{Tags: []string{"Admin"}, Security: httpx.SessionSecurity}
	huma.Register(api, admin.Op("get_api_admin_marketplace_review", http.MethodGet, "/api/admin/marketplace/review",
		"Items no review decided yet, oldest first (instance admins)"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]MarketItem], error) {
			if _, err := actor.RequireAdmin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.ReviewQueue(ctx))
		})
	for _, op := range []struct {
		id, path, summary string
		do                func(ctx context.Context, u *actor.User, id, reason string) (*MarketItem, error)
	}{
		{"post_api_admin_marketplace_items_id_review_approve", "/review/approve", "Approve an item: verified, installable across the instance",
			func(ctx context.Context, u *actor.User, id, reason string) (*MarketItem, error) {
				return s.Review(ctx, u, id, "approved", reason)
			}},
		{"post_api_admin_marketplace_items_id_review_reject", "/review/reject", "Reject an item (an optional reason): verified stays false",
			func(ctx context.Context, u *actor.User, id, reason string) (*MarketItem, error) {
				return s.Review(ctx, u, id, "rejected", reason)
			}},
		{"post_api_admin_marketplace_items_id_takedown", "/takedown", "Take an item down: every version withdrawn, installs blocked, verified cleared",
			func(ctx context.Context, u *actor.User, id, _ string) (*MarketItem, error) {
				return s.Takedown(ctx, u, id)
			}},
		{"post_api_admin_marketplace_items_id_restore", "/restore", "Restore a taken-down item: versions un-withdrawn, verified stays false",
			func(ctx context.Context, u *actor.User, id, _ string) (*MarketItem, error) {
				return s.Restore(ctx, u, id)
			}},
	} {
		do := op.do
		huma.Register(api, admin.Op(op.id, http.MethodPost, "/api/admin/marketplace/items/{id}"+op.path, op.summary+" (instance admins)"),
			func(ctx context.Context, in *reviewInput) (*httpx.Out[*MarketItem], error) {
				u, err := actor.RequireAdmin(ctx)
				if err != nil {
					return nil, err
				}
				reason := ""
				if in.Body != nil {
					reason = in.Body.Reason
				}
				return httpx.Reply(do(ctx, u, in.ID, reason))
			})
	}
}
