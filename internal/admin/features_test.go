package admin_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"slipway/internal/admin"
	"slipway/internal/apitest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/vault/kvtest"
)

const featurePath = "/api/admin/feature-availability"

func features(t *testing.T, r *apitest.Response) admin.FeatureAvailability {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s = %d %s", featurePath, r.Status, r.Body)
	}
	var b admin.FeatureAvailability
	r.JSON(t, &b)
	return b
}

// byName indexes the rows, failing on a duplicate or an empty env var list.
func byName(t *testing.T, b admin.FeatureAvailability) map[string]admin.Feature {
	t.Helper()
	out := map[string]admin.Feature{}
	for _, f := range b.Features {
		if _, dup := out[f.Name]; dup {
			t.Fatalf("feature %q twice", f.Name)
		}
		if f.Category == "" || len(f.EnvVars) == 0 {
			t.Fatalf("feature %+v has no category or no env var", f)
		}
		out[f.Name] = f
	}
	return out
}

// TestFeatureAvailability: with nothing configured the vault (env) is the
// one feature available, and it is boot-critical; the counts add up; only
// an instance admin gets the report.
func TestFeatureAvailability(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		adm := app.Admin()
		user := app.Approved(adm, "Uma User")
		pending := app.Pending("Pat Pending")
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "non-admin", Client: user, Method: "GET", Path: featurePath, WantStatus: http.StatusForbidden, WantCode: "forbidden",
				WantNotContains: []string{"secret_backend"}},
			{Name: "pending", Client: pending, Method: "GET", Path: featurePath, WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "anonymous", Method: "GET", Path: featurePath, WantStatus: http.StatusUnauthorized, WantCode: "unauthorized"},
		})

		r := adm.Do("GET", featurePath, nil)
		b := features(t, r)
		if b.SecretBackend != "env" || b.Edition != "Community" || !b.BootCritical {
			t.Fatalf("report = %s", r.Body)
		}
		rows := byName(t, b)
		want := []string{"Secret vault", "OpenBao", "Outgoing mail", "Captcha", "Model provider fallback key", "Speech to text",
			"Error sink", "TLS", "Public URL", "Runner client certificates", "Hub mode for runners"}
		if len(rows) != len(want) || b.Total != len(want) {
			t.Fatalf("%d rows, total %d, want %d: %s", len(rows), b.Total, len(want), r.Body)
		}
		for _, name := range want {
			f, ok := rows[name]
			if !ok {
				t.Fatalf("no row %q: %s", name, r.Body)
			}
			if f.Available != (name == "Secret vault") || f.BootCritical != (name == "Secret vault") {
				t.Fatalf("row %+v on an unconfigured instance", f)
			}
		}
		if b.Available != 1 || b.Unavailable != len(want)-1 {
			t.Fatalf("available %d, unavailable %d: %s", b.Available, b.Unavailable, r.Body)
		}
		if got := strings.Join(rows["Secret vault"].EnvVars, ","); got != "SECRET_BACKEND,SERVICE_VAULT_KEYS" {
			t.Fatalf("the env vault's env vars = %s", got)
		}
		if got := strings.Join(rows["Outgoing mail"].EnvVars, ","); !strings.Contains(got, "SERVICE_SMTP_HOST") || !strings.Contains(got, "SERVICE_SMTP_PASSWORD") {
			t.Fatalf("outgoing mail's env vars = %s", got)
		}
		// Exactly the documented fields, in the body and in every row.
		keys := apitest.ObjectKeys(t, r.Body)
		slices.Sort(keys)
		if keys := strings.Join(keys, ","); keys != "available,boot_critical,edition,features,secret_backend,total,unavailable" {
			t.Fatalf("fields = %s", keys)
		}
	})
}

// TestFeatureAvailabilityConfigured: with OpenBao (a token), mail, a
// captcha, model keys, an error sink, a public URL and hub mode set, each
// of those is available and the backend is openbao; the body names the env
// vars and holds none of their values.
func TestFeatureAvailabilityConfigured(t *testing.T) {
	bao := kvtest.New(t, kvtest.Options{Token: "bao-root-token-features"})
	values := []string{
		"BAO_ADDR", bao.URL,
		"BAO_TOKEN", "bao-root-token-features",
		"SERVICE_SMTP_HOST", "smtp.features.test",
		"SERVICE_SMTP_USERNAME", "mailer-user-features",
		"SERVICE_SMTP_PASSWORD", "smtp-password-features",
		"SERVICE_SMTP_FROM", "slipway@features.test",
		"SERVICE_CAPTCHA_SECRET", "captcha-secret-features-0123456789",
		"LLM_PROVIDER_API_KEY", "sk-llm-features-key",
		"SPEECH_PROVIDER_API_KEY", "sk-speech-features-key",
		"SERVICE_ERROR_SINK_DSN", "https://public-key@sink.features.test/42",
		"PUBLIC_URL", "https://slipway.features.test",
		"SERVICE_HUB_MODE", "true",
	}
	app := apitest.New(t, db.SQLite, values...)
	for i := 1; i < len(values); i += 2 {
		if values[i] != "true" {
			app.Remember(values[i])
		}
	}
	adm := app.Admin()
	r := adm.Do("GET", featurePath, nil)
	b := features(t, r)
	if b.SecretBackend != "openbao" || b.Edition != "Community" {
		t.Fatalf("report = %s", r.Body)
	}
	for i := 1; i < len(values); i += 2 {
		if values[i] != "true" && strings.Contains(string(r.Body), values[i]) {
			t.Fatalf("the body holds the value of %s: %s", values[i-1], r.Body)
		}
	}
	rows := byName(t, b)
	for _, name := range []string{"Secret vault", "OpenBao", "Outgoing mail", "Captcha", "Model provider fallback key", "Speech to text",
		"Error sink", "Public URL", "Hub mode for runners"} {
		if !rows[name].Available {
			t.Fatalf("%s is not available: %s", name, r.Body)
		}
	}
	for _, name := range []string{"TLS", "Runner client certificates"} {
		if rows[name].Available {
			t.Fatalf("%s is available: %s", name, r.Body)
		}
	}
	if b.Available != 9 || b.Unavailable != 2 || b.Total != 11 {
		t.Fatalf("available %d, unavailable %d, total %d", b.Available, b.Unavailable, b.Total)
	}
	if got := strings.Join(rows["Secret vault"].EnvVars, ","); got != "SECRET_BACKEND,BAO_ADDR,BAO_TOKEN" {
		t.Fatalf("the OpenBao vault's env vars = %s", got)
	}
	// SECRET_BACKEND=env keeps the env backend with OpenBao's variables set:
	// OpenBao is then not in use.
	app = apitest.New(t, db.SQLite, "BAO_ADDR", bao.URL, "BAO_TOKEN", "bao-root-token-features", "SECRET_BACKEND", "env")
	app.Remember("bao-root-token-features")
	b = features(t, app.Admin().Do("GET", featurePath, nil))
	if b.SecretBackend != "env" || byName(t, b)["OpenBao"].Available {
		t.Fatalf("with SECRET_BACKEND=env: %+v", b)
	}
}
