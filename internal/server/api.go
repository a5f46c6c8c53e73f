package server

import (
	"context"
	"net/http"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"slipway/internal/activity"
	"slipway/internal/admin"
	"slipway/internal/app"
	"slipway/internal/approvals"
	"slipway/internal/apps"
	"slipway/internal/attention"
	"slipway/internal/audit"
	"slipway/internal/auth"
	"slipway/internal/backlog"
	"slipway/internal/billing"
	"slipway/internal/buildinfo"
	"slipway/internal/captcha"
	"slipway/internal/changes"
	"slipway/internal/codefiles"
	"slipway/internal/commands"
	"slipway/internal/commerce"
	"slipway/internal/conversations"
	"slipway/internal/envvars"
	"slipway/internal/errorpages"
	"slipway/internal/mail"
	"slipway/internal/marketplace"
	"slipway/internal/n8nimport"
	"slipway/internal/notifications"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
	"slipway/internal/platform/realtime"
	"slipway/internal/projects"
	"slipway/internal/proposals"
	"slipway/internal/resources"
	"slipway/internal/runnerapi"
	"slipway/internal/runners"
	"slipway/internal/runs"
	"slipway/internal/scripts"
	"slipway/internal/tasks"
	"slipway/internal/templates"
	"slipway/internal/tenancy"
	"slipway/internal/triggers"
	"slipway/internal/undo"
	"slipway/internal/workflows"
	"slipway/internal/workflowscan"
)

// API versions, shown in the OpenAPI documents. They change with the API, not
// with each build, so the committed specs stay stable.
const (
	PublicAPIVersion     = "0.1.0"
	ManagementAPIVersion = "0.1.0"
	ManagementPrefix     = "/api/management/v1"
)

// APIs are the two Huma APIs that share one mux.
type APIs struct {
	Public     huma.API
	Management huma.API
}

// Services are what the operations call (built by app.Build). Any field
// may be nil when the APIs are built only to export their OpenAPI
// documents: handlers reach services only when a request arrives.
type Services = app.Services

func humaConfig(title, version, openAPIPath string) huma.Config {
	cfg := huma.Config{
		OpenAPI: &huma.OpenAPI{
			OpenAPI: "3.1.0",
			Info: &huma.Info{
				Title:   title,
				Version: version,
			},
			Components: &huma.Components{
				Schemas:         huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer),
				SecuritySchemes: map[string]*huma.SecurityScheme{},
			},
		},
		OpenAPIPath:   openAPIPath,
		DefaultFormat: "application/json",
		Formats: map[string]huma.Format{
			"application/json": httpx.JSONFormat,
			"json":             httpx.JSONFormat,
		},
		// No docs UI and no $schema links in bodies: responses carry exactly
		// the spec's fields.
	}
	return cfg
}

// NewAPIs registers both APIs and all their operations on mux.
func NewAPIs(mux *httpx.Mux, svc Services) APIs {
	pub := humago.New(mux, humaConfig("Slipway API", PublicAPIVersion, "/api/openapi"))
	pub.UseMiddleware(httpx.PathIDs(pub))
	pub.UseMiddleware(httpx.OperationSpans) // a span per operation under a traced request (observe.go)
	pub.OpenAPI().Info.Description = "The public API of Slipway: projects, tasks, runs, workflows and everything around them."
	pub.OpenAPI().Components.SecuritySchemes["session"] = &huma.SecurityScheme{
		Type: "apiKey", In: "cookie", Name: "service_session",
		Description: "Browser session; unsafe methods also need the X-CSRF-Token header matching the service_csrf cookie.",
	}

	pub.OpenAPI().Components.SecuritySchemes["runnerToken"] = &huma.SecurityScheme{
		Type: "http", Scheme: "bearer",
		Description: "Runner token: a static scrn_ token, or a scrnj_ JWT from redeeming an enrollment token. With mutual TLS on, a client certificate as well.",
	}

	pub.OpenAPI().Components.SecuritySchemes["appToken"] = &huma.SecurityScheme{
		Type: "http", Scheme: "bearer",
		Description: "App token (scwa_): one per deployment, for the app's backend calls and run submissions only.",
	}

	mgmt := humago.New(mux, humaConfig("Slipway Management API", ManagementAPIVersion, ManagementPrefix+"/openapi"))
	mgmt.OpenAPI().Info.Description = "Machine-to-machine administration with desired-state (idempotent) semantics."
	mgmt.OpenAPI().Components.SecuritySchemes["bearer"] = &huma.SecurityScheme{
		Type: "http", Scheme: "bearer", Description: "Management API token.",
	}

	// The error body is part of every API, including one with no operations yet.
	mgmt.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[httpx.Error](), true, "Error")

	registerMeta(pub)
	documentPlainRoutes(pub)
	auth.Register(pub, svc.Auth)
	captcha.Register(pub, svc.Captcha)
	tenancy.Register(pub, svc.Tenancy)
	admin.Register(pub, svc.Auth, svc.Tenancy, svc.Features, svc.SEO)
	audit.Register(pub, svc.Audit)
	billing.Register(pub, svc.Billing, svc.Tenancy.WorkspaceScoped(pub),
		func(ctx context.Context, u *actor.User, sel billing.Selector) (string, string, error) {
			o, err := svc.Tenancy.Organization(ctx, u, tenancy.Selector{OrganizationID: sel.OrganizationID, WorkspaceID: sel.WorkspaceID})
			if err != nil {
				return "", "", err
			}
			return o.ID, o.Role, nil
		})
	billing.RegisterPublic(pub, svc.Billing)
	mail.Register(pub, svc.Mail)
	projects.Register(pub, svc.Projects, svc.Tenancy.WorkspaceScoped(pub))
	backlog.Register(pub, svc.Backlog, svc.Tenancy.WorkspaceScoped(pub))
	notifications.Register(pub, svc.Notifications, svc.Tenancy.WorkspaceScoped(pub))
	proposals.Register(pub, svc.Proposals, svc.Tenancy.WorkspaceScoped(pub))
	marketplace.Register(pub, svc.Marketplace, svc.Tenancy.WorkspaceScoped(pub))
	commerce.Register(pub, svc.Commerce, svc.Tenancy.WorkspaceScoped(pub))
	attention.Register(pub, svc.Attention, svc.Tenancy.WorkspaceScoped(pub))
	workflowscan.Register(pub, svc.Scans, svc.Tenancy.WorkspaceScoped(pub))
	tasks.Register(pub, svc.Tasks, svc.Tenancy.WorkspaceScoped(pub))
	approvals.Register(pub, svc.Approvals, svc.Tenancy.WorkspaceScoped(pub))
	conversations.Register(pub, svc.Conversations, svc.Tenancy.WorkspaceScoped(pub))
	undo.Register(pub, svc.Undo, svc.Tenancy.WorkspaceScoped(pub))
	changes.Register(pub, svc.Changes, svc.Tenancy.WorkspaceScoped(pub))
	commands.Register(pub, svc.Commands, svc.Tenancy.WorkspaceScoped(pub))
	runs.Register(pub, svc.Runs, svc.Tenancy.WorkspaceScoped(pub))
	activity.Register(pub, svc.Activity, svc.Tenancy.WorkspaceScoped(pub))
	realtime.Register(pub, svc.Realtime, svc.Live, svc.Tenancy.WorkspaceScoped(pub))
	// Before workflows: the earlier registration wins the paths the layered
	// mux shares (/api/workflows/templates/{slug} and /api/workflows/{id}/runs).
	templates.Register(pub, svc.Templates, svc.Tenancy.WorkspaceScoped(pub))
	n8nimport.Register(pub, svc.N8nImport, svc.Tenancy.WorkspaceScoped(pub))
	workflows.Register(pub, svc.Workflows, svc.Tenancy.WorkspaceScoped(pub))
	triggers.Register(pub, svc.Triggers, svc.Tenancy.WorkspaceScoped(pub))
	scripts.Register(pub, svc.Scripts, svc.Tenancy.WorkspaceScoped(pub))
	codefiles.Register(pub, svc.CodeFiles, svc.Tenancy.WorkspaceScoped(pub))
	resources.Register(pub, svc.Resources, svc.Tenancy.WorkspaceScoped(pub))
	envvars.Register(pub, svc.EnvVars, svc.Tenancy.WorkspaceScoped(pub))
	errorpages.Register(pub, svc.ErrorPages, svc.Tenancy.WorkspaceScoped(pub))
	apps.Register(pub, svc.Apps, svc.Tenancy.WorkspaceScoped(pub))
	apps.RegisterSubmissions(pub, svc.AppRuns)
	runners.Register(pub, svc.Runners)
	runners.RegisterAPI(pub, svc.Runners, svc.RunnerPort, svc.RunnerClientCert)
	publishWildcards(pub.OpenAPI())
	return APIs{Public: pub, Management: mgmt}
}

// VersionOutput is the body of GET /api/version.
type VersionOutput struct {
	Body struct {
		Version              string   `json:"version" doc:"Release version of the server" example:"1.4.0"`
		PublicAPIVersion     string   `json:"public_api_version" doc:"Version of this API's OpenAPI document"`
		ManagementAPIVersion string   `json:"management_api_version" doc:"Version of the management API's OpenAPI document"`
		RunnerAPIVersions    []string `json:"runner_api_versions" doc:"Runner API versions this hub speaks (path segments under /api/runner/)"`
	}
}

func registerMeta(api huma.API) {
	huma.Register(api, huma.Operation{
		OperationID: "get-version",
		Method:      http.MethodGet,
		Path:        "/api/version",
		Summary:     "Server and API versions",
		Description: "Lets clients (consoles, CLIs, runners) check compatibility before they call anything else.",
		Tags:        []string{"Meta"},
	}, func(ctx context.Context, _ *struct{}) (*VersionOutput, error) {
		out := &VersionOutput{}
		out.Body.Version = buildinfo.Version
		out.Body.PublicAPIVersion = PublicAPIVersion
		out.Body.ManagementAPIVersion = ManagementAPIVersion
		out.Body.RunnerAPIVersions = []string{runnerapi.APIVersion}
		return out, nil
	})
}

// documentPlainRoutes adds the routes served by plain handlers (probes,
// installer redirects) to the public OpenAPI document, so the document lists
// every route even where Huma does not serve it.
func documentPlainRoutes(api huma.API) {
	oa := api.OpenAPI()
	errSchema := &huma.Schema{Ref: "#/components/schemas/Error"}
	jsonErr := func(desc string) *huma.Response {
		return &huma.Response{Description: desc, Content: map[string]*huma.MediaType{"application/json": {Schema: errSchema}}}
	}
	status := &huma.Schema{Type: "object", Properties: map[string]*huma.Schema{"status": {Type: "string"}}, Required: []string{"status"}}
	ok := &huma.Response{Description: "OK", Content: map[string]*huma.MediaType{"application/json": {Schema: status}}}
	oa.AddOperation(&huma.Operation{
		OperationID: "livez", Method: http.MethodGet, Path: "/livez", Tags: []string{"Probes"},
		Summary:   "Liveness: the process runs",
		Responses: map[string]*huma.Response{"200": ok},
	})
	oa.AddOperation(&huma.Operation{
		OperationID: "readyz", Method: http.MethodGet, Path: "/readyz", Tags: []string{"Probes"},
		Summary:   "Readiness: 503 once shutting down or when the database does not answer within two seconds",
		Responses: map[string]*huma.Response{"200": ok, "503": jsonErr("Not ready")},
	})
	for id, p := range map[string]string{"install-runner-sh": "/install-runner.sh", "install-runner-ps1": "/install-runner.ps1"} {
		oa.AddOperation(&huma.Operation{
			OperationID: id, Method: http.MethodGet, Path: p, Tags: []string{"Runners"},
			Summary: "Redirect to the runner installer on the release feed",
			Responses: map[string]*huma.Response{
				"302": {Description: "Redirect to {SERVICE_RUNNER_DOWNLOAD_BASE}/{SERVICE_RUNNER_VERSION}" + p},
				"503": jsonErr("SERVICE_RUNNER_VERSION or SERVICE_RUNNER_DOWNLOAD_BASE is unset"),
			},
		})
	}
}

// publishWildcards writes a route's trailing wildcard ({path...}, Go's
// mux pattern) as the plain OpenAPI template {path}: a client fills it
// with the value escaped (a/b as a%2Fb), which the mux decodes back.
func publishWildcards(o *huma.OpenAPI) {
	for p, item := range o.Paths {
		if strings.Contains(p, "...}") {
			delete(o.Paths, p)
			o.Paths[strings.ReplaceAll(p, "...}", "}")] = item
		}
	}
}
