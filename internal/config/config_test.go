package config

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway/internal/platform/db"
)

// prodBase is the smallest valid production environment.
func prodBase() map[string]string {
	return map[string]string{
		"MODE":                         "prod",
		"PUBLIC_URL":                   "https://slipway.example.com",
		"SERVICE_JWT_SECRET":           strings.Repeat("s", 32),
		"SERVICE_INITIAL_ADMIN_EMAILS": "Owner@Example.com",
	}
}

func with(base map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func without(base map[string]string, keys ...string) map[string]string {
	out := with(base)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

func TestLoadValid(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, c *Config)
	}{
		{"empty environment is a dev instance with spec defaults", map[string]string{}, func(t *testing.T, c *Config) {
			eq(t, c.Mode, ModeDev)
			eq(t, c.Port, 8080)
			eq(t, c.DataDir, "./data")
			eq(t, c.Database, db.Target{Engine: db.SQLite, Path: filepath.Join("./data", "slipway.db")})
			eq(t, c.ShutdownLBDelay, 5*time.Second)
			eq(t, c.ShutdownGrace, 20*time.Second)
			eq(t, c.AuthProvider, "builtin")
			eq(t, c.CookieSecure, false)
			eq(t, c.SecretBackend, "env") // auto without OpenBao auth
			eq(t, c.CalibrationSweepInterval, 86400*time.Second)
			eq(t, c.CalibrationSweepMinAge, 86400*time.Second)
			eq(t, c.CalibrationRefreshInterval, 21600*time.Second)
			eq(t, c.ResourceSecretReconcileInterval, 21600*time.Second)
			eq(t, c.Agent.Network, "service-agents")
			eq(t, c.Agent.MemoryBytes, int64(2147483648))
			eq(t, c.Agent.NanoCPUs, int64(2000000000))
			eq(t, c.Agent.PidsLimit, int64(512))
			eq(t, c.Agent.ReadOnlyRootFS, true)
			eq(t, c.Agent.TmpfsTmpMB, int64(512))
			eq(t, c.Agent.TmpfsRunMB, int64(64))
			eq(t, c.Agent.TmpfsHomeMB, int64(512))
			eq(t, c.Agent.TestDB, false)
			eq(t, c.Agent.TestDBImage, "postgres:18")
			eq(t, c.Agent.AttachmentsFileWait, 30*time.Second)
			eq(t, c.Agent.TaskTimeout, 90*time.Minute)
			eq(t, c.MaxParallelTasksPerWorkspace, 3)
			eq(t, c.HubMode, false)
			eq(t, c.AgentExecution, "")
			eq(t, c.HubEventRelay, false)
			eq(t, c.RunnerStale, 90*time.Second)
			eq(t, c.TLS.Enabled(), false)
			eq(t, c.RunnerRelease.Configured(), false)
			eq(t, c.Autoscale.Enabled, false)
			eq(t, c.Autoscale.Network, "service-agents")
			eq(t, c.LogLevel, slog.LevelInfo)
			eq(t, c.SkipBootMigrations, false)
			eq(t, c.InstanceID, "") // resolved at boot (ResolveInstanceID)
			eq(t, c.WorkerSlots, 32)
			eq(t, c.WorkerLease, 60*time.Second)
			eq(t, c.JWTSecret, Secret(""))
			eq(t, c.AgentBackend, "auto")
			eq(t, c.AgentImage, "")
			eq(t, c.Argon2MemoryKiB, uint32(32768))
			eq(t, c.Argon2Time, uint32(2))
		}},
		{"dev may lower the hashing cost (tests do)", map[string]string{"SERVICE_ARGON2_MEMORY_KIB": "64", "SERVICE_ARGON2_TIME": "1"}, func(t *testing.T, c *Config) {
			eq(t, c.Argon2MemoryKiB, uint32(64))
			eq(t, c.Argon2Time, uint32(1))
		}},
		{"minimal production", prodBase(), func(t *testing.T, c *Config) {
			eq(t, c.Mode, ModeProd)
			eq(t, c.CookieSecure, true)
			eq(t, c.InitialAdminEmails, []string{"owner@example.com"})
		}},
		{"MODE=production is production", with(prodBase(), "MODE", "production"), func(t *testing.T, c *Config) {
			eq(t, c.Mode, ModeProd)
		}},
		{"any other MODE is dev", map[string]string{"MODE": "staging"}, func(t *testing.T, c *Config) {
			eq(t, c.Mode, ModeDev)
		}},
		{"production may turn secure cookies off for local HTTP", with(prodBase(), "AUTH_COOKIE_SECURE", "false"), func(t *testing.T, c *Config) {
			eq(t, c.CookieSecure, false)
		}},
		{"dev may turn secure cookies on", map[string]string{"AUTH_COOKIE_SECURE": "TRUE"}, func(t *testing.T, c *Config) {
			eq(t, c.CookieSecure, true)
		}},
		{"empty value counts as unset", map[string]string{"SERVER_PORT": "  "}, func(t *testing.T, c *Config) {
			eq(t, c.Port, 8080)
		}},
		{"postgres URL", map[string]string{"DATABASE_URL": "postgres://u:p@db:5432/slipway"}, func(t *testing.T, c *Config) {
			eq(t, c.Database, db.Target{Engine: db.Postgres, URL: "postgres://u:p@db:5432/slipway"})
		}},
		{"postgres pool size", map[string]string{"DATABASE_URL": "postgres://db/slipway", "SERVICE_DB_POOL_SIZE": "12"}, func(t *testing.T, c *Config) {
			eq(t, c.Database, db.Target{Engine: db.Postgres, URL: "postgres://db/slipway", PoolSize: 12})
		}},
		{"postgresql URL", map[string]string{"DATABASE_URL": "postgresql://db/slipway"}, func(t *testing.T, c *Config) {
			eq(t, c.Database.Engine, db.Postgres)
		}},
		{"sqlite: path", map[string]string{"DATABASE_URL": "sqlite:/var/lib/slipway/x.db"}, func(t *testing.T, c *Config) {
			eq(t, c.Database, db.Target{Engine: db.SQLite, Path: "/var/lib/slipway/x.db"})
		}},
		{"file: path", map[string]string{"DATABASE_URL": "file:rel/x.db"}, func(t *testing.T, c *Config) {
			eq(t, c.Database, db.Target{Engine: db.SQLite, Path: "rel/x.db"})
		}},
		{"data dir moves the default database", map[string]string{"SERVICE_DATA_DIR": "/srv/sw"}, func(t *testing.T, c *Config) {
			eq(t, c.Database.Path, "/srv/sw/slipway.db")
		}},
		{"stale window below the floor is raised to 45 with a notice", map[string]string{"SERVICE_RUNNER_STALE_SECS": "10"}, func(t *testing.T, c *Config) {
			eq(t, c.RunnerStale, 45*time.Second)
			if len(c.Notices) != 1 || !strings.Contains(c.Notices[0], "SERVICE_RUNNER_STALE_SECS") {
				t.Fatalf("notices = %q", c.Notices)
			}
		}},
		{"stale window above the floor is kept", map[string]string{"SERVICE_RUNNER_STALE_SECS": "46"}, func(t *testing.T, c *Config) {
			eq(t, c.RunnerStale, 46*time.Second)
			eq(t, len(c.Notices), 0)
		}},
		{"sweep min age follows the interval", map[string]string{"SERVICE_CALIBRATION_SWEEP_INTERVAL_SECS": "600"}, func(t *testing.T, c *Config) {
			eq(t, c.CalibrationSweepMinAge, 600*time.Second)
		}},
		{"TLS pair and client CA", map[string]string{"SERVICE_TLS_CERT_PATH": "c.pem", "SERVICE_TLS_KEY_PATH": "k.pem", "SERVICE_TLS_CLIENT_CA_PATH": "ca.pem"}, func(t *testing.T, c *Config) {
			eq(t, c.TLS, TLS{CertPath: "c.pem", KeyPath: "k.pem", ClientCAPath: "ca.pem"})
		}},
		{"autoscale on with image", map[string]string{"SERVICE_RUNNER_AUTOSCALE": "on", "SERVICE_RUNNER_AUTOSCALE_RUNNER_IMAGE": "slipway:runner", "SERVICE_RUNNER_AUTOSCALE_MIN": "2"}, func(t *testing.T, c *Config) {
			eq(t, c.Autoscale.Enabled, true)
			eq(t, c.Autoscale.Min, 2)
			eq(t, c.Autoscale.Max, 2)
			eq(t, c.Autoscale.Cooldown, 60*time.Second)
		}},
		{"lists are split on commas and spaces", map[string]string{"SERVICE_INITIAL_ADMIN_EMAILS": "a@x.io, B@Y.io  c@z.io", "CORS_ALLOWED_ORIGINS": "https://a.io/,http://localhost:5173"}, func(t *testing.T, c *Config) {
			eq(t, c.InitialAdminEmails, []string{"a@x.io", "b@y.io", "c@z.io"})
			eq(t, c.CORSAllowedOrigins, []string{"https://a.io", "http://localhost:5173"})
		}},
		{"release feed", map[string]string{"SERVICE_RUNNER_VERSION": "1.2.3", "SERVICE_RUNNER_DOWNLOAD_BASE": "https://releases.example.com/slipway/"}, func(t *testing.T, c *Config) {
			eq(t, c.RunnerRelease, RunnerRelease{Version: "1.2.3", DownloadBase: "https://releases.example.com/slipway"})
		}},
		{"listen address and trusted proxies", map[string]string{"SERVICE_LISTEN_ADDR": "127.0.0.1", "SERVICE_TRUSTED_PROXIES": "10.1.2.3/8 192.0.2.7"}, func(t *testing.T, c *Config) {
			if c.ListenAddr != "127.0.0.1" || len(c.TrustedProxies) != 2 || c.TrustedProxies[0].String() != "10.0.0.0/8" || c.TrustedProxies[1].String() != "192.0.2.7/32" {
				t.Fatalf("listen %q, proxies %v", c.ListenAddr, c.TrustedProxies)
			}
		}},
		{"port 0 picks a free port", map[string]string{"SERVER_PORT": "0"}, func(t *testing.T, c *Config) {
			eq(t, c.Port, 0)
		}},
		{"session cache on SQLite by default", map[string]string{}, func(t *testing.T, c *Config) {
			eq(t, c.SessionCacheTTL, 10*time.Second)
		}},
		{"session cache on PostgreSQL by default (replicas invalidate each other)", map[string]string{"DATABASE_URL": "postgres://db/x"}, func(t *testing.T, c *Config) {
			eq(t, c.SessionCacheTTL, 10*time.Second)
		}},
		{"session cache chosen explicitly on PostgreSQL", map[string]string{"DATABASE_URL": "postgres://db/x", "SERVICE_SESSION_CACHE_SECS": "5"}, func(t *testing.T, c *Config) {
			eq(t, c.SessionCacheTTL, 5*time.Second)
		}},
		{"fleet_only execution", map[string]string{"SERVICE_AGENT_EXECUTION": "fleet_only"}, func(t *testing.T, c *Config) {
			eq(t, c.AgentExecution, "fleet_only")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(MapLookup(tt.env))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestLoadInvalid(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		// want lists, per expected error line, the variable it must name.
		want []string
	}{
		{"prod without PUBLIC_URL", without(prodBase(), "PUBLIC_URL"), []string{"PUBLIC_URL"}},
		{"prod without JWT secret", without(prodBase(), "SERVICE_JWT_SECRET"), []string{"SERVICE_JWT_SECRET"}},
		{"prod with short JWT secret", with(prodBase(), "SERVICE_JWT_SECRET", strings.Repeat("s", 31)), []string{"SERVICE_JWT_SECRET"}},
		{"dev with short JWT secret", map[string]string{"SERVICE_JWT_SECRET": "short"}, []string{"SERVICE_JWT_SECRET"}},
		{"prod builtin without admin emails", without(prodBase(), "SERVICE_INITIAL_ADMIN_EMAILS"), []string{"SERVICE_INITIAL_ADMIN_EMAILS"}},
		{"prod oidc without admin emails", with(without(prodBase(), "SERVICE_INITIAL_ADMIN_EMAILS"), "AUTH_PROVIDER", "oidc"), []string{"SERVICE_INITIAL_ADMIN_EMAILS"}},
		{"prod with nothing names every missing variable", map[string]string{"MODE": "prod"}, []string{"PUBLIC_URL", "SERVICE_JWT_SECRET", "SERVICE_INITIAL_ADMIN_EMAILS"}},
		{"PUBLIC_URL not a URL", map[string]string{"PUBLIC_URL": "slipway.example.com"}, []string{"PUBLIC_URL"}},
		{"bad admin email", map[string]string{"SERVICE_INITIAL_ADMIN_EMAILS": "root"}, []string{"SERVICE_INITIAL_ADMIN_EMAILS"}},
		{"unknown auth provider", map[string]string{"AUTH_PROVIDER": "ldap"}, []string{"AUTH_PROVIDER"}},
		{"unknown database scheme", map[string]string{"DATABASE_URL": "mysql://db/x"}, []string{"DATABASE_URL"}},
		{"database URL without scheme", map[string]string{"DATABASE_URL": "slipway.db"}, []string{"DATABASE_URL"}},
		{"sqlite URL with query", map[string]string{"DATABASE_URL": "file:x.db?mode=ro"}, []string{"DATABASE_URL"}},
		{"sqlite in-memory", map[string]string{"DATABASE_URL": "sqlite::memory:"}, []string{"DATABASE_URL"}},
		{"cert without key", map[string]string{"SERVICE_TLS_CERT_PATH": "c.pem"}, []string{"SERVICE_TLS_KEY_PATH"}},
		{"key without cert", map[string]string{"SERVICE_TLS_KEY_PATH": "k.pem"}, []string{"SERVICE_TLS_CERT_PATH"}},
		{"client CA without cert and key", map[string]string{"SERVICE_TLS_CLIENT_CA_PATH": "ca.pem"}, []string{"SERVICE_TLS_CLIENT_CA_PATH"}},
		{"client CA with cert only", map[string]string{"SERVICE_TLS_CLIENT_CA_PATH": "ca.pem", "SERVICE_TLS_CERT_PATH": "c.pem"}, []string{"SERVICE_TLS_KEY_PATH", "SERVICE_TLS_CLIENT_CA_PATH"}},
		{"unparsable port", map[string]string{"SERVER_PORT": "eighty"}, []string{"SERVER_PORT"}},
		{"worker lease too short", map[string]string{"SERVICE_WORKER_LEASE_SECS": "4"}, []string{"SERVICE_WORKER_LEASE_SECS"}},
		{"worker lease too long", map[string]string{"SERVICE_WORKER_LEASE_SECS": "3601"}, []string{"SERVICE_WORKER_LEASE_SECS"}},
		{"worker lease not a number", map[string]string{"SERVICE_WORKER_LEASE_SECS": "1m"}, []string{"SERVICE_WORKER_LEASE_SECS"}},
		{"no worker slots", map[string]string{"SERVICE_WORKER_SLOTS": "0"}, []string{"SERVICE_WORKER_SLOTS"}},
		{"instance id with a space", map[string]string{"SERVICE_INSTANCE_ID": "my host"}, []string{"SERVICE_INSTANCE_ID"}},
		{"port out of range", map[string]string{"SERVER_PORT": "70000"}, []string{"SERVER_PORT"}},
		{"listen address not an address", map[string]string{"SERVICE_LISTEN_ADDR": "example.com"}, []string{"SERVICE_LISTEN_ADDR"}},
		{"trusted proxy not a CIDR", map[string]string{"SERVICE_TRUSTED_PROXIES": "10.0.0.0/8, proxy.local"}, []string{"SERVICE_TRUSTED_PROXIES"}},
		{"pool size zero", map[string]string{"SERVICE_DB_POOL_SIZE": "0"}, []string{"SERVICE_DB_POOL_SIZE"}},
		{"negative delay", map[string]string{"SERVICE_SHUTDOWN_LB_DELAY_SECS": "-1"}, []string{"SERVICE_SHUTDOWN_LB_DELAY_SECS"}},
		{"unparsable grace", map[string]string{"SERVICE_SHUTDOWN_GRACE_SECS": "20s"}, []string{"SERVICE_SHUTDOWN_GRACE_SECS"}},
		{"unparsable boolean", map[string]string{"SERVICE_SKIP_BOOT_MIGRATIONS": "maybe"}, []string{"SERVICE_SKIP_BOOT_MIGRATIONS"}},
		{"unparsable cookie flag", map[string]string{"AUTH_COOKIE_SECURE": "sure"}, []string{"AUTH_COOKIE_SECURE"}},
		{"unparsable memory", map[string]string{"AGENT_MEMORY_BYTES": "2g"}, []string{"AGENT_MEMORY_BYTES"}},
		{"zero parallel tasks", map[string]string{"MAX_PARALLEL_TASKS_PER_WORKSPACE": "0"}, []string{"MAX_PARALLEL_TASKS_PER_WORKSPACE"}},
		{"unparsable stale window", map[string]string{"SERVICE_RUNNER_STALE_SECS": "ninety"}, []string{"SERVICE_RUNNER_STALE_SECS"}},
		{"unknown secret backend", map[string]string{"SECRET_BACKEND": "vault"}, []string{"SECRET_BACKEND"}},
		{"unknown execution policy", map[string]string{"SERVICE_AGENT_EXECUTION": "fleet"}, []string{"SERVICE_AGENT_EXECUTION"}},
		{"autoscale on without image", map[string]string{"SERVICE_RUNNER_AUTOSCALE": "on"}, []string{"SERVICE_RUNNER_AUTOSCALE_RUNNER_IMAGE"}},
		{"autoscale unknown value", map[string]string{"SERVICE_RUNNER_AUTOSCALE": "auto"}, []string{"SERVICE_RUNNER_AUTOSCALE"}},
		{"autoscale max below min", map[string]string{"SERVICE_RUNNER_AUTOSCALE_MIN": "3", "SERVICE_RUNNER_AUTOSCALE_MAX": "2"}, []string{"SERVICE_RUNNER_AUTOSCALE_MAX"}},
		{"bad instance id", map[string]string{"SERVICE_INSTANCE_ID": "hub one"}, []string{"SERVICE_INSTANCE_ID"}},
		{"bad CORS origin", map[string]string{"CORS_ALLOWED_ORIGINS": "https://a.io/app"}, []string{"CORS_ALLOWED_ORIGINS"}},
		{"bad download base", map[string]string{"SERVICE_RUNNER_DOWNLOAD_BASE": "releases"}, []string{"SERVICE_RUNNER_DOWNLOAD_BASE"}},
		{"unknown log level", map[string]string{"SERVICE_LOG_LEVEL": "loud"}, []string{"SERVICE_LOG_LEVEL"}},
		{"process backend in production", with(prodBase(), "SERVICE_AGENT_BACKEND", "process"), []string{"SERVICE_AGENT_BACKEND"}},
		{"unknown backend", map[string]string{"SERVICE_AGENT_BACKEND": "podman"}, []string{"SERVICE_AGENT_BACKEND"}},
		{"weak argon2 memory in production", with(prodBase(), "SERVICE_ARGON2_MEMORY_KIB", "1024"), []string{"SERVICE_ARGON2_MEMORY_KIB"}},
		{"weak argon2 time in production", with(prodBase(), "SERVICE_ARGON2_TIME", "1"), []string{"SERVICE_ARGON2_TIME"}},
		{"unparsable argon2 memory", map[string]string{"SERVICE_ARGON2_MEMORY_KIB": "lots"}, []string{"SERVICE_ARGON2_MEMORY_KIB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(MapLookup(tt.env))
			assertLines(t, err, tt.want)
		})
	}
}

// assertLines checks that err has exactly one line per wanted variable and
// that each line starts with the variable it is about.
func assertLines(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want errors naming %v, got none", want)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("want %d error lines naming %v, got %d:\n%s", len(want), want, len(lines), err)
	}
	for i, name := range want {
		if !strings.HasPrefix(lines[i], name+": ") {
			t.Errorf("line %d = %q, want it to name %s", i, lines[i], name)
		}
	}
}

func TestSecretsNeverPrint(t *testing.T) {
	c, err := Load(MapLookup(with(prodBase(), "LLM_PROVIDER_API_KEY", "sk-live-abcdef")))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(format, c)
		if strings.Contains(out, "sk-live-abcdef") || strings.Contains(out, strings.Repeat("s", 32)) {
			t.Fatalf("%s printed a secret: %s", format, out)
		}
	}
	if c.LLMProviderAPIKey.Reveal() != "sk-live-abcdef" {
		t.Fatal("Reveal lost the value")
	}
}

// TestVarTablesMatchParsing keeps the documented tables (and so the README)
// equal to the names the loaders actually read.
func TestVarTablesMatchParsing(t *testing.T) {
	_, r := load(MapLookup(nil))
	compareNames(t, "ServerVars", ServerVars, r.read)
	// An ssh backend reads every runner variable.
	_, rr := loadRunner(MapLookup(map[string]string{"SERVICE_RUNNER_EXECUTION_BACKEND": "raw-ssh-exec"}))
	compareNames(t, "RunnerVars", RunnerVars, rr.read)
}

func compareNames(t *testing.T, table string, vars []Var, read map[string]bool) {
	t.Helper()
	var documented []string
	for _, v := range vars {
		documented = append(documented, v.Name)
		if !read[v.Name] {
			t.Errorf("%s documents %s but the loader never reads it", table, v.Name)
		}
	}
	for name := range read {
		if !slices.Contains(documented, name) {
			t.Errorf("the loader reads %s but %s does not document it", name, table)
		}
	}
}

func eq[T any](t *testing.T, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

func TestSecretBackendAuto(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
		err  string
	}{
		{map[string]string{"BAO_ADDR": "http://bao:8200", "BAO_TOKEN": "t"}, "openbao", ""},
		{map[string]string{"BAO_ADDR": "http://bao:8200", "BAO_ROLE_ID": "r", "BAO_SECRET_ID": "s"}, "openbao", ""},
		{map[string]string{"BAO_ADDR": "http://bao:8200", "BAO_ROLE_ID": "r"}, "env", ""},
		{map[string]string{"BAO_TOKEN": "t"}, "env", ""},
		{map[string]string{"BAO_ADDR": "http://bao:8200", "BAO_TOKEN": "t", "SECRET_BACKEND": "env"}, "env", ""},
		{map[string]string{"SECRET_BACKEND": "openbao"}, "", "openbao needs BAO_ADDR"},
		{map[string]string{"SERVICE_VAULT_KEYS": "k1:dG9vIHNob3J0"}, "", "SERVICE_VAULT_KEYS: key \"k1\": the key must be 32 bytes"},
		{map[string]string{"SERVICE_VAULT_KEYS": "k2:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}, "env", ""},
	} {
		c, err := Load(MapLookup(tc.env))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%v: %v, want %q", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil || c.SecretBackend != tc.want {
			t.Fatalf("%v: %v %v, want %s", tc.env, c, err, tc.want)
		}
	}
}
