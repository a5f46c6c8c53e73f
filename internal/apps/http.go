package apps

import (
	"context"
	"encoding/json"
	"mime"
	"mime/multipart"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/apps/manifest"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/board"
	"slipway/internal/platform/httpx"
)

type idInput struct {
	ID string `path:"id" doc:"App id"`
}

type createInput struct {
	Body AppCreate
}

type updateInput struct {
	ID   string `path:"id" doc:"App id"`
	Body AppUpdate
}

type boardInput struct {
	board.Query
	Status string `query:"status" enum:"deployed,undeployed,never," doc:"Only apps deployed, undeployed, or never deployed"`
}

type installInput struct {
	ID   string           `path:"id" doc:"App id"`
	Body *AppInstallInput `required:"false"`
}

type fileInput struct {
	ID   string `path:"id" doc:"App id"`
	Path string `path:"path" doc:"The file's path in the app, e.g. assets/app.js"`
}

type filePutInput struct {
	ID          string `path:"id" doc:"App id"`
	Path        string `path:"path" doc:"The file's path in the app, e.g. assets/app.js"`
	IfMatch     string `header:"If-Match" doc:"Replace only if the file's etag is this (* : if it exists); else 412"`
	IfNoneMatch string `header:"If-None-Match" doc:"*: create only; 412 if the file exists"`
	Body        AppFileWrite
}

type fileDeleteInput struct {
	ID      string `path:"id" doc:"App id"`
	Path    string `path:"path" doc:"The file's path in the app"`
	IfMatch string `header:"If-Match" doc:"Delete only if the file's etag is this; else 412"`
}

// FileOutput is a file with its etag in the ETag header.
type FileOutput struct {
	ETag string `header:"ETag"`
	Body *AppFile
}

// FileInfoOutput answers a write with the new etag.
type FileInfoOutput struct {
	Status int
	ETag   string `header:"ETag"`
	Body   *AppFileInfo
}

// BuildOutput answers a build: 201 for a new one, 200 for the existing
// build of the same source.
type BuildOutput struct {
	Status int
	Body   *AppBuild
}

type deployInput struct {
	ID   string `path:"id" doc:"App id"`
	Body AppDeployInput
}

type patchInput struct {
	ID   string `path:"id" doc:"App id"`
	Body AppDeploymentPatch
}

// Register mounts the apps operations; scoped resolves the active
// workspace.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Apps"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	ctxOf := func(ctx context.Context) (*actor.Workspace, *actor.User) {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees both
		u, _ := actor.UserFrom(ctx)
		return w, u
	}

	huma.Register(api, httpx.Operations{Tags: []string{"Apps"}}.Op("get_api_apps_manifest_schema", http.MethodGet, "/api/apps/manifest-schema",
		"The JSON Schema (draft 2020-12) an app's manifest_yaml is validated against"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[json.RawMessage], error) {
			return httpx.Reply(json.RawMessage(manifest.Schema()), nil)
		})
	registerBackend(api, s, ops)
	huma.Register(api, ops.Op("get_api_apps", http.MethodGet, "/api/apps", "The workspace's apps by name, without their manifests"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]AppSummary], error) {
			w, u := ctxOf(ctx)
			return httpx.Reply(s.List(ctx, w, u))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_apps", http.MethodPost, "/api/apps",
		"Create an app: a name unique in the workspace and a manifest valid against the published schema (within the plan's apps.max)")),
		func(ctx context.Context, in *createInput) (*httpx.Out[*App], error) {
			w, u := ctxOf(ctx)
			return httpx.Reply(s.Create(ctx, w, u, in.Body))
		})
	huma.Register(api, ops.Op("get_api_apps_board", http.MethodGet, "/api/apps/board", "Apps as a board: search, sort, pages, a status facet"),
		func(ctx context.Context, in *boardInput) (*httpx.Out[*board.Board[AppSummary]], error) {
			w, u := ctxOf(ctx)
			return httpx.Reply(s.Board(ctx, w, u, in.Query, in.Status))
		})
	huma.Register(api, ops.Op("get_api_apps_id", http.MethodGet, "/api/apps/{id}", "An app with its manifest"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*App], error) {
			w, u := ctxOf(ctx)
			return httpx.Reply(s.Get(ctx, w, u, in.ID))
		})
	huma.Register(api, ops.Op("put_api_apps_id", http.MethodPut, "/api/apps/{id}",
		"Change an app: absent fields stay; description absent leaves it, null clears it, a value sets it"),
		func(ctx context.Context, in *updateInput) (*httpx.Out[*App], error) {
			w, u := ctxOf(ctx)
			return httpx.Reply(s.Update(ctx, w, u, in.ID, in.Body))
		})
	huma.Register(api, ops.Op("delete_api_apps_id", http.MethodDelete, "/api/apps/{id}",
		"Delete an app with its files, builds, deployment and install rows"),
		func(ctx context.Context, in *idInput) (*httpx.DeletedOutput, error) {
			w, u := ctxOf(ctx)
			ok, err := s.Delete(ctx, w, u, in.ID)
			if err != nil {
				return nil, err
			}
			out := httpx.Deleted()
			out.Body.Deleted = ok
			return out, nil
		})
	huma.Register(api, ops.Op("post_api_apps_id_install", http.MethodPost, "/api/apps/{id}/install",
		"Install the app for you, or for another member of its workspace (a workspace admin); installing twice changes nothing"),
		func(ctx context.Context, in *installInput) (*httpx.Out[*AppInstallation], error) {
			w, u := ctxOf(ctx)
			return httpx.Reply(s.Install(ctx, w, u, in.ID, userOf(in.Body), true))
		})
	huma.Register(api, ops.Op("post_api_apps_id_uninstall", http.MethodPost, "/api/apps/{id}/uninstall",
		"Uninstall the app for you, or for another member (a workspace admin); uninstalling twice changes nothing"),
		func(ctx context.Context, in *installInput) (*httpx.Out[*AppInstallation], error) {
			w, u := ctxOf(ctx)
			return httpx.Reply(s.Install(ctx, w, u, in.ID, userOf(in.Body), false))
		})

	huma.Register(api, ops.Op("get_api_apps_id_files", http.MethodGet, "/api/apps/{id}/files", "The app's files by path, without their contents"),
		func(ctx context.Context, in *idInput) (*httpx.Out[[]AppFileInfo], error) {
			w, _ := ctxOf(ctx)
			return httpx.Reply(s.Files(ctx, w, in.ID))
		})
	huma.Register(api, ops.Op("get_api_apps_id_files_path", http.MethodGet, "/api/apps/{id}/files/{path...}",
		"A file with its content (utf-8 text, or base64) and its etag, also in the ETag header"),
		func(ctx context.Context, in *fileInput) (*FileOutput, error) {
			w, _ := ctxOf(ctx)
			f, err := s.File(ctx, w, in.ID, in.Path)
			if err != nil {
				return nil, err
			}
			return &FileOutput{ETag: `"` + f.ETag + `"`, Body: f}, nil
		})
	huma.Register(api, httpx.BodyLimit(ops.Op("put_api_apps_id_files_path", http.MethodPut, "/api/apps/{id}/files/{path...}",
		"Create (201) or replace (200) a file: at most 1 MiB, 1000 files and 20 MiB per app; If-Match holds it to an etag, If-None-Match: * makes it create-only (412 otherwise)"),
		3<<20),
		func(ctx context.Context, in *filePutInput) (*FileInfoOutput, error) {
			w, _ := ctxOf(ctx)
			f, created, err := s.PutFile(ctx, w, in.ID, in.Path, in.Body, Precondition{IfMatch: in.IfMatch, IfNoneMatch: in.IfNoneMatch})
			if err != nil {
				return nil, err
			}
			status := http.StatusOK
			if created {
				status = http.StatusCreated
			}
			return &FileInfoOutput{Status: status, ETag: `"` + f.ETag + `"`, Body: f}, nil
		})
	huma.Register(api, ops.Op("delete_api_apps_id_files_path", http.MethodDelete, "/api/apps/{id}/files/{path...}",
		"Delete a file; {deleted: false} when there was none; If-Match holds it to an etag"),
		func(ctx context.Context, in *fileDeleteInput) (*httpx.DeletedOutput, error) {
			w, _ := ctxOf(ctx)
			ok, err := s.DeleteFile(ctx, w, in.ID, in.Path, in.IfMatch)
			if err != nil {
				return nil, err
			}
			out := httpx.Deleted()
			out.Body.Deleted = ok
			return out, nil
		})

	huma.Register(api, ops.Op("get_api_apps_id_builds", http.MethodGet, "/api/apps/{id}/builds", "The app's latest build, or null for an app never built"),
		func(ctx context.Context, in *idInput) (*httpx.Out[httpx.Maybe[AppBuild]], error) {
			w, _ := ctxOf(ctx)
			return httpx.Reply(httpx.MaybeOf(s.LatestBuild(ctx, w, in.ID)))
		})
	huma.Register(api, ops.Op("post_api_apps_id_builds", http.MethodPost, "/api/apps/{id}/builds",
		"Build the app's source into an immutable release: 201 for a new build, 200 with the existing one when the source is unchanged"),
		func(ctx context.Context, in *idInput) (*BuildOutput, error) {
			w, u := ctxOf(ctx)
			b, created, err := s.StartBuild(ctx, w, u, in.ID)
			if err != nil {
				return nil, err
			}
			status := http.StatusOK
			if created {
				status = http.StatusCreated
			}
			return &BuildOutput{Status: status, Body: b}, nil
		})
	huma.Register(api, ops.Op("get_api_apps_id_releases", http.MethodGet, "/api/apps/{id}/releases",
		"The app's builds, newest first (at most 200): the releases a deployment can point at"),
		func(ctx context.Context, in *idInput) (*httpx.Out[[]AppBuild], error) {
			w, _ := ctxOf(ctx)
			return httpx.Reply(s.Builds(ctx, w, in.ID))
		})
	huma.Register(api, ops.Op("post_api_apps_id_deploy", http.MethodPost, "/api/apps/{id}/deploy",
		"Serve a release (the given build, else the latest succeeded one) at a route path: /a<route_path>/"),
		func(ctx context.Context, in *deployInput) (*httpx.Out[*AppDeployment], error) {
			w, u := ctxOf(ctx)
			return httpx.Reply(s.Deploy(ctx, w, u, in.ID, in.Body))
		})
	huma.Register(api, ops.Op("post_api_apps_id_undeploy", http.MethodPost, "/api/apps/{id}/undeploy",
		"Stop serving the app: its route shows the error page until it is deployed again"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*AppDeployment], error) {
			w, u := ctxOf(ctx)
			return httpx.Reply(s.Undeploy(ctx, w, u, in.ID))
		})
	huma.Register(api, ops.Op("get_api_apps_id_deployment", http.MethodGet, "/api/apps/{id}/deployment", "The app's deployment, or null when it never was"),
		func(ctx context.Context, in *idInput) (*httpx.Out[httpx.Maybe[AppDeployment]], error) {
			w, _ := ctxOf(ctx)
			return httpx.Reply(httpx.MaybeOf(s.Deployment(ctx, w, in.ID)))
		})
	huma.Register(api, ops.Op("patch_api_apps_id_deployment", http.MethodPatch, "/api/apps/{id}/deployment",
		"Point the deployment at another release (a rollback: nothing is rebuilt; 409 when its migrations are not a prefix of those applied) or move its route"),
		func(ctx context.Context, in *patchInput) (*httpx.Out[*AppDeployment], error) {
			w, u := ctxOf(ctx)
			return httpx.Reply(s.PatchDeployment(ctx, w, u, in.ID, in.Body))
		})
	huma.Register(api, ops.Op("get_api_apps_id_deployment_error_page", http.MethodGet, "/api/apps/{id}/deployment/error-page",
		"The page the app shows when undeployed or failing, resolved through the cascade: its own, its workspace's, the instance's, the built-in one"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*ResolvedErrorPage], error) {
			w, _ := ctxOf(ctx)
			return httpx.Reply(s.ErrorPage(ctx, w, in.ID))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_apps_id_deployment_token", http.MethodPost, "/api/apps/{id}/deployment/token",
		"Mint the deployment's App token (a workspace owner or admin): scwa_…, shown this once, for server-side use; it replaces the one before")),
		func(ctx context.Context, in *idInput) (*httpx.Out[*AppToken], error) {
			w, u := ctxOf(ctx)
			return httpx.Reply(s.CreateToken(ctx, w, u, in.ID))
		})
	huma.Register(api, ops.Op("delete_api_apps_id_deployment_token", http.MethodDelete, "/api/apps/{id}/deployment/token",
		"Revoke the deployment's App token (a workspace owner or admin); {deleted: false} when there was none"),
		func(ctx context.Context, in *idInput) (*httpx.DeletedOutput, error) {
			w, u := ctxOf(ctx)
			ok, err := s.DeleteToken(ctx, w, u, in.ID)
			if err != nil {
				return nil, err
			}
			out := httpx.Deleted()
			out.Body.Deleted = ok
			return out, nil
		})
}

type migrationInput struct {
	ID   string `path:"id" doc:"App id"`
	Body AppMigrationCreate
}

// MigrationOutput answers a recorded migration: 201 new, 200 the same one.
type MigrationOutput struct {
	Status int
	Body   *AppMigration
}

type callInput struct {
	ID       string `path:"id" doc:"App id"`
	Function string `path:"function_name" maxLength:"63" doc:"A function the manifest declares"`
	Body     BackendCall
}

// backendSecurity: a session, or the app's App token.
var backendSecurity = []map[string][]string{{"session": {}}, {"appToken": {}}}

// callerGate authenticates a backend call before its body is read: an App
// token (checked against the app next) or an approved session.
func callerGate(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(hctx huma.Context, next func(huma.Context)) {
		ctx := hctx.Context()
		if _, ok := actor.AppTokenFrom(ctx); !ok {
			if _, err := actor.RequireApproved(ctx); err != nil {
				e := httpx.FromError(ctx, err)
				_ = huma.WriteErr(api, hctx, e.GetStatus(), e.Message, e)
				return
			}
		}
		next(hctx)
	}
}

func registerBackend(api huma.API, s *Service, ops httpx.Operations) {
	huma.Register(api, ops.Op("get_api_apps_id_migrations", http.MethodGet, "/api/apps/{id}/migrations",
		"The app's database migrations, oldest first: name, SQL, checksum, applied_at (null until a deploy applies it)"),
		func(ctx context.Context, in *idInput) (*httpx.Out[[]AppMigration], error) {
			w, _ := actor.WorkspaceFrom(ctx)
			return httpx.Reply(s.Migrations(ctx, w, in.ID))
		})
	huma.Register(api, ops.Op("post_api_apps_id_migrations", http.MethodPost, "/api/apps/{id}/migrations",
		"Record a migration (201); the same name and SQL again changes nothing (200); the same name with other SQL is refused (400). It applies at the next deploy of a release built after it"),
		func(ctx context.Context, in *migrationInput) (*MigrationOutput, error) {
			w, _ := actor.WorkspaceFrom(ctx)
			u, _ := actor.UserFrom(ctx)
			m, created, err := s.AddMigration(ctx, w, u, in.ID, in.Body)
			if err != nil {
				return nil, err
			}
			status := http.StatusOK
			if created {
				status = http.StatusCreated
			}
			return &MigrationOutput{Status: status, Body: m}, nil
		})

	callOps := httpx.Operations{Tags: []string{"Apps"}, Security: backendSecurity, Middlewares: huma.Middlewares{callerGate(api)}}
	huma.Register(api, callOps.Op("get_api_apps_id_backend", http.MethodGet, "/api/apps/{id}/backend",
		"The app's backend functions: name, operation and typed arguments, never their SQL (a session of the app's workspace, or its App token)"),
		func(ctx context.Context, in *idInput) (*httpx.Out[[]manifest.FunctionInfo], error) {
			return httpx.Reply(s.Backend(ctx, in.ID))
		})
	huma.Register(api, callOps.Op("post_api_apps_id_backend_function_name", http.MethodPost, "/api/apps/{id}/backend/{function_name}",
		"Call a backend function of the deployed release with positional arguments, synchronously, within its time and row limits (a session of the app's workspace, or its App token)"),
		func(ctx context.Context, in *callInput) (*httpx.Out[*BackendResult], error) {
			return httpx.Reply(s.Call(ctx, in.ID, in.Function, in.Body))
		})
}

type submitInput struct {
	ID      string         `path:"id" doc:"App id"`
	RawBody multipart.Form `contentType:"multipart/form-data"`
}

type downloadInput struct {
	ID string `path:"id" doc:"Upload id"`
}

// DownloadOutput is a submitted file, as an attachment.
type DownloadOutput struct {
	ContentType        string `header:"Content-Type"`
	ContentDisposition string `header:"Content-Disposition"`
	CSP                string `header:"Content-Security-Policy"`
	NoSniff            string `header:"X-Content-Type-Options"`
	ETag               string `header:"ETag"`
	Body               []byte
}

// RegisterSubmissions mounts the run submissions and the downloads of
// their files.
func RegisterSubmissions(api huma.API, s *Submissions) {
	callOps := httpx.Operations{Tags: []string{"Apps"}, Security: backendSecurity, Middlewares: huma.Middlewares{callerGate(api)}}
	huma.Register(api, httpx.BodyLimit(httpx.Created(callOps.Op("post_api_apps_id_runs", http.MethodPost, "/api/apps/{id}/runs",
		"Start a run of a workflow of the app's workspace from a multipart submission: workflow_id, input (a JSON object), files (at most 10, 10 MiB each, kept a day); a session of the workspace or the app's App token")),
		MaxSubmissionBytes),
		func(ctx context.Context, in *submitInput) (*httpx.Out[*AppRun], error) {
			return httpx.Reply(s.Submit(ctx, in.ID, &in.RawBody))
		})
	ops := httpx.Operations{Tags: []string{"Apps"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{httpx.Approved(api)}}
	huma.Register(api, ops.Op("get_api_app_uploads_id_download", http.MethodGet, "/api/app_uploads/{id}/download",
		"A file submitted with an app's run, as an attachment, to a member of its workspace (404 when missing or expired)"),
		func(ctx context.Context, in *downloadInput) (*DownloadOutput, error) {
			u, _ := actor.UserFrom(ctx)
			info, content, err := s.Download(ctx, u, in.ID)
			if err != nil {
				return nil, err
			}
			return &DownloadOutput{ContentType: info.ContentType, ContentDisposition: mime.FormatMediaType("attachment", map[string]string{"filename": info.Name}),
				CSP: "sandbox; default-src 'none'", NoSniff: "nosniff", ETag: `"` + info.SHA256 + `"`, Body: content}, nil
		})
}

func userOf(in *AppInstallInput) string {
	if in == nil {
		return ""
	}
	return in.UserID
}
