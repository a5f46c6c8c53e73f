package admin

import (
	"context"
	"net/http"
	"slices"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/config"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

// Edition is what this build is. There is no license mechanism yet, so
// every instance is the Community edition (docs/decisions.md).
const Edition = "Community"

// Feature is one optional, secret-backed feature of the instance: the env
// vars that configure it and whether they do. Never a value.
type Feature struct {
	Category     string   `json:"category" doc:"The area the feature belongs to (Secrets, Mail, Sign-in, Models, Observability, Network, Runners)"`
	Name         string   `json:"name"`
	EnvVars      []string `json:"env_vars" doc:"The names of the environment variables that configure it (never their values)"`
	Available    bool     `json:"available" doc:"The loaded configuration turns the feature on"`
	BootCritical bool     `json:"boot_critical" doc:"The server refuses to start when it is misconfigured"`
}

// FeatureAvailability is the owner console's features tab: which optional,
// secret-backed features this instance has configured.
type FeatureAvailability struct {
	SecretBackend string    `json:"secret_backend" enum:"env,openbao" doc:"Where tenants' secrets are kept: env (sealed in the database) or openbao"`
	Edition       string    `json:"edition" enum:"Community,Enterprise" doc:"Community until a license mechanism exists"`
	Available     int       `json:"available" doc:"Features configured"`
	Unavailable   int       `json:"unavailable" doc:"Features not configured"`
	Total         int       `json:"total"`
	BootCritical  bool      `json:"boot_critical" doc:"The secret backend is boot-critical: the server refuses to start when its settings are wrong, and every secret goes through it"`
	Features      []Feature `json:"features"`
}

// Features reports what the loaded configuration turns on. The
// configuration does not change while the server runs: the report is made
// once, in the constructor.
type Features struct {
	report FeatureAvailability
}

// NewFeatures reads cfg (as config.Load left it: SECRET_BACKEND already
// resolved to env or openbao).
func NewFeatures(cfg *config.Config) *Features {
	vault := []string{"SECRET_BACKEND", "SERVICE_VAULT_KEYS"}
	if cfg.SecretBackend == "openbao" {
		vault = []string{"SECRET_BACKEND", "BAO_ADDR", "BAO_TOKEN"}
		if cfg.OpenBao.Token == "" {
			vault = []string{"SECRET_BACKEND", "BAO_ADDR", "BAO_ROLE_ID", "BAO_SECRET_ID"}
		}
	}
	rows := []Feature{
		// Always there: the env backend needs nothing (its key derives from
		// the signing secret), and a server whose vault settings are wrong
		// does not start.
		{Category: "Secrets", Name: "Secret vault", EnvVars: vault, Available: true, BootCritical: true},
		{Category: "Secrets", Name: "OpenBao", EnvVars: []string{"BAO_ADDR", "BAO_TOKEN", "BAO_ROLE_ID", "BAO_SECRET_ID"},
			Available: cfg.SecretBackend == "openbao"},
		{Category: "Mail", Name: "Outgoing mail", EnvVars: []string{"SERVICE_SMTP_HOST", "SERVICE_SMTP_PORT", "SERVICE_SMTP_USERNAME",
			"SERVICE_SMTP_PASSWORD", "SERVICE_SMTP_FROM", "SERVICE_SMTP_SECURITY"}, Available: cfg.SMTP.Host != ""},
		{Category: "Sign-in", Name: "Captcha", EnvVars: []string{"SERVICE_CAPTCHA_SECRET"}, Available: cfg.CaptchaSecret != ""},
		{Category: "Models", Name: "Model provider fallback key", EnvVars: []string{"LLM_PROVIDER_API_KEY"}, Available: cfg.LLMProviderAPIKey != ""},
		{Category: "Models", Name: "Speech to text", EnvVars: []string{"SPEECH_PROVIDER_API_KEY"}, Available: cfg.SpeechProviderAPIKey != ""},
		{Category: "Observability", Name: "Error sink", EnvVars: []string{"SERVICE_ERROR_SINK_DSN"}, Available: cfg.ErrorSinkDSN != ""},
		{Category: "Network", Name: "TLS", EnvVars: []string{"SERVICE_TLS_CERT_PATH", "SERVICE_TLS_KEY_PATH"}, Available: cfg.TLS.Enabled()},
		{Category: "Network", Name: "Public URL", EnvVars: []string{"PUBLIC_URL"}, Available: cfg.PublicURL != ""},
		{Category: "Runners", Name: "Runner client certificates", EnvVars: []string{"SERVICE_TLS_CLIENT_CA_PATH"}, Available: cfg.TLS.ClientCAPath != ""},
		{Category: "Runners", Name: "Hub mode for runners", EnvVars: []string{"SERVICE_HUB_MODE"}, Available: cfg.HubMode},
	}
	r := FeatureAvailability{SecretBackend: cfg.SecretBackend, Edition: Edition, Total: len(rows), BootCritical: true, Features: rows}
	for _, f := range rows {
		if f.Available {
			r.Available++
		}
	}
	r.Unavailable = r.Total - r.Available
	return &Features{report: r}
}

// Report returns the report (a copy: callers may change it).
func (f *Features) Report() FeatureAvailability {
	r := f.report
	r.Features = slices.Clone(r.Features)
	for i := range r.Features {
		r.Features[i].EnvVars = slices.Clone(r.Features[i].EnvVars)
	}
	return r
}

func registerFeatures(api huma.API, ops httpx.Operations, f *Features) {
	huma.Register(api, ops.Op("get_api_admin_feature_availability", http.MethodGet, "/api/admin/feature-availability",
		"Which optional, secret-backed features this instance has configured (env var names, never values)"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[FeatureAvailability], error) {
			if _, err := actor.RequireAdmin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(f.Report(), nil)
		})
}
