// Package apps holds hosted applications: an app's manifest and files,
// who has it installed, its builds (immutable, content-addressed releases),
// its deployment at a route path (a pointer to a release, so a rollback
// moves the pointer), the App token and serving its files.
package apps

import (
	"encoding/json"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/apps/manifest"
	"slipway/internal/platform/httpx"
)

// Bounds on what a tenant stores in an app.
const (
	// MaxPerWorkspace bounds a workspace's apps whatever its plan says.
	MaxPerWorkspace = 1000
	// MaxFileBytes bounds one file (larger assets go through uploads).
	MaxFileBytes = 1 << 20
	// MaxFiles and MaxTotalBytes bound an app's source tree.
	MaxFiles      = 1000
	MaxTotalBytes = 20 << 20
	// MaxPathBytes and MaxSegments bound a file's path.
	MaxPathBytes = 255
	MaxSegments  = 12
	// MaxManifestBytes bounds manifest_yaml (the parser holds the same).
	MaxManifestBytes = 64 << 10
	// MaxDescription bounds an app's description (characters).
	MaxDescription = 1000
)

// AppSummary is an app in a list: everything but its manifest.
type AppSummary struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Description *string        `json:"description" nullable:"true"`
	Installed   bool           `json:"installed" doc:"Whether you have the app installed"`
	Deployment  *AppDeployment `json:"deployment" doc:"Where the app is deployed; null when it never was"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
}

// TransformSchema documents deployment as nullable (null: never deployed).
func (AppSummary) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	return nullableDeployment(s)
}

func nullableDeployment(s *huma.Schema) *huma.Schema {
	if p := s.Properties["deployment"]; p != nil && p.Ref != "" {
		n := httpx.NullableRef(&huma.Schema{Ref: p.Ref})
		n.Description = p.Description
		s.Properties["deployment"] = n
	}
	return s
}

// App is an app with its manifest.
type App struct {
	AppSummary
	ManifestYAML string             `json:"manifest_yaml"`
	Manifest     *manifest.Manifest `json:"manifest" doc:"The manifest as read, with its defaults"`
}

// TransformSchema documents deployment as nullable (null: never deployed).
func (App) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	return nullableDeployment(s)
}

// AppCreate makes an app.
type AppCreate struct {
	Name         string  `json:"name" minLength:"1" maxLength:"100"`
	Description  *string `json:"description,omitempty" maxLength:"4000"`
	ManifestYAML string  `json:"manifest_yaml" minLength:"1" maxLength:"200000" doc:"The manifest (YAML), validated against the published JSON Schema at /api/apps/manifest-schema"`
}

// AppUpdate changes an app; absent fields stay. Description is three-state:
// absent leaves it, null clears it, a value sets it.
type AppUpdate struct {
	Name         *string                `json:"name,omitempty" minLength:"1" maxLength:"100"`
	Description  httpx.Optional[string] `json:"description" required:"false" nullable:"true" maxLength:"4000" doc:"Absent: unchanged; null: cleared; a string: set"`
	ManifestYAML *string                `json:"manifest_yaml,omitempty" minLength:"1" maxLength:"200000"`
}

// AppInstallInput names who installs the app: a member of its workspace
// (absent: you).
type AppInstallInput struct {
	UserID string `json:"user_id,omitempty" doc:"A member of the app's workspace (absent: you); installing for another member takes a workspace admin"`
}

// AppInstallation answers install and uninstall.
type AppInstallation struct {
	AppID     string `json:"app_id"`
	UserID    string `json:"user_id"`
	Installed bool   `json:"installed"`
}

// AppFileInfo is a file of an app without its content.
type AppFileInfo struct {
	Path      string    `json:"path"`
	Size      int64     `json:"size"`
	ETag      string    `json:"etag" doc:"Hex SHA-256 of the content, also in the ETag header"`
	UpdatedAt time.Time `json:"updated_at"`
}

// AppFile is a file with its content.
type AppFile struct {
	AppFileInfo
	Content  string `json:"content"`
	Encoding string `json:"encoding" enum:"utf-8,base64" doc:"utf-8: content is the text; base64: content is the bytes, base64-encoded"`
}

// AppFileWrite is a file's new content.
type AppFileWrite struct {
	Content  string `json:"content" maxLength:"1500000"`
	Encoding string `json:"encoding,omitempty" enum:"utf-8,base64" doc:"Default utf-8"`
}

// AppDeployment is where an app is served and which release it serves.
type AppDeployment struct {
	AppID      string    `json:"app_id"`
	ReleaseID  string    `json:"release_id" doc:"The build (release) served"`
	Release    int64     `json:"release" doc:"The release's number"`
	RoutePath  string    `json:"route_path" doc:"The route path, e.g. /orders"`
	URL        string    `json:"url" doc:"Where the app is served: /a + the route path + /"`
	Status     string    `json:"status" enum:"deployed,undeployed"`
	HasToken   bool      `json:"has_token" doc:"Whether an App token exists (it is never shown again)"`
	DeployedAt time.Time `json:"deployed_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// AppBuild is a build of an app: queued, running, then a succeeded release
// or a failure. A release never changes.
type AppBuild struct {
	ID         string     `json:"id"`
	AppID      string     `json:"app_id"`
	Number     int64      `json:"number" doc:"1 for the app's first build, then 2, …"`
	SourceHash string     `json:"source_hash" doc:"SHA-256 over the manifest, the files and the migrations: the same source is one build"`
	Status     string     `json:"status" enum:"queued,running,succeeded,failed"`
	Error      *string    `json:"error" nullable:"true"`
	Files      int        `json:"files" doc:"How many files the release serves (until a build step succeeds: its source's)"`
	RunID      *string    `json:"run_id" nullable:"true" doc:"The run of the build step, whose events are its log (null: no build step ran)"`
	Migrations []string   `json:"migrations" doc:"The migrations the release expects, oldest first"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at" nullable:"true"`
}

// AppDeployInput deploys a release at a route path.
type AppDeployInput struct {
	RoutePath string `json:"route_path" minLength:"1" maxLength:"100" doc:"/ and 1 to 3 segments of a-z, 0-9 and -: served at /a<route_path>/"`
	BuildID   string `json:"build_id,omitempty" doc:"The release to serve (absent: the latest succeeded build)"`
}

// AppDeploymentPatch changes a deployment: the release it serves (a rollback
// or a roll forward, a pointer swap) or its route path.
type AppDeploymentPatch struct {
	BuildID   *string `json:"build_id,omitempty" doc:"Serve this release: no rebuild; refused (409) when its migrations are not a prefix of those applied"`
	RoutePath *string `json:"route_path,omitempty" minLength:"1" maxLength:"100"`
	// ErrorPage is the app's own error page (a JSON object; {} clears it,
	// so the workspace's or the instance's shows).
	ErrorPage json.RawMessage `json:"error_page,omitempty" doc:"The app's own error page: title, message, contact ({} clears it: the workspace's or the instance's shows)"`
}

// ResolvedErrorPage is the page an undeployed or failing app shows, and
// which level of the cascade it comes from.
type ResolvedErrorPage struct {
	Page   json.RawMessage `json:"page"`
	Source string          `json:"source" enum:"app,workspace,instance,default"`
}
