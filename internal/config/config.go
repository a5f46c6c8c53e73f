// Package config turns the environment into one typed Config for the hub and
// one Runner config for `slipway runner`. Parsing is pure (no files, no
// network); every problem becomes one error line that names its variable.
package config

import (
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"slipway/internal/agents/protocol"
	"slipway/internal/platform/dburl"
	"slipway/internal/platform/vaultkeys"
)

// Mode is dev or prod.
type Mode string

const (
	ModeDev  Mode = "dev"
	ModeProd Mode = "prod"
)

// MinJWTSecretBytes is the spec's minimum signing-secret length.
const MinJWTSecretBytes = 32

// MinProdArgon2MemoryKiB is OWASP's minimum argon2id memory (19 MiB).
const MinProdArgon2MemoryKiB = 19456

// RunnerStaleFloor is the spec's floor for SERVICE_RUNNER_STALE_SECS.
const RunnerStaleFloor = 45 * time.Second

// Config is everything the hub reads from its environment.
type Config struct {
	Mode               Mode
	PublicURL          string
	CORSAllowedOrigins []string
	Database           dburl.Target
	DataDir            string
	LogLevel           slog.Level
	Port               int
	// ListenAddr is the address the server binds ("" every interface).
	ListenAddr string
	// TrustedProxies may set X-Forwarded-For: the client address of a
	// request that comes through them is the first one they did not add.
	TrustedProxies     []netip.Prefix
	SkipBootMigrations bool
	ShutdownLBDelay    time.Duration
	ShutdownGrace      time.Duration

	AuthProvider       string
	JWTSecret          Secret // empty in dev until ResolveJWTSecret runs
	InitialAdminEmails []string
	CookieSecure       bool
	SessionCacheTTL    time.Duration
	Argon2MemoryKiB    uint32
	Argon2Time         uint32

	SecretBackend string
	// Vault: the env backend's keys (SERVICE_VAULT_KEYS, "" for the key
	// derived from the instance secret) and the OpenBao connection.
	VaultKeys                       Secret
	OpenBao                         OpenBao
	CalibrationSweepInterval        time.Duration
	CalibrationSweepMinAge          time.Duration
	CalibrationRefreshInterval      time.Duration
	ResourceSecretReconcileInterval time.Duration
	SpeechProviderAPIKey            Secret
	LLMProviderAPIKey               Secret
	// StripeWebhookSecret verifies Stripe's webhook deliveries; without it
	// no payment provider is configured.
	StripeWebhookSecret Secret
	// StripeSecretKey calls Stripe's API (prices); StripeAPIBase points it
	// elsewhere (a local double).
	StripeSecretKey Secret
	StripeAPIBase   string
	// Payouts: who pays the marketplace's sellers, and through which bank.
	Payouts Payouts
	// LLMProviderBaseURL is the one provider LLM_PROVIDER_API_KEY is sent
	// to: a profile or node pointing elsewhere never gets the key.
	LLMProviderBaseURL string

	AgentBackend string // auto, docker or process
	DockerHost   string
	AgentImage   string
	AgentBinary  string
	// ProcessSandbox: auto (every layer the host has) or off (none: only
	// instance admins' code runs on the process backend).
	ProcessSandbox               string
	Agent                        Agent
	MaxParallelTasksPerWorkspace int
	ErrorSinkDSN                 Secret
	HubMode                      bool
	AgentExecution               string // "" or "fleet_only"
	InstanceID                   string // "" until ResolveInstanceID when not configured
	WorkerSlots                  int
	WorkerLease                  time.Duration
	RunRetentionDays             int // SERVICE_RUN_RETENTION_DAYS: finished runs older than this are pruned (0: kept forever)
	HubEventRelay                bool
	// RealtimePerAccount bounds one account's WebSockets and event
	// streams on one server.
	RealtimePerAccount       int
	WorkflowHTTPAllowPrivate bool
	RunnerStale              time.Duration
	RunnerJWTLifetime        time.Duration
	ToolApprovalTimeout      time.Duration
	UndoWindow               time.Duration
	UndoGrace                time.Duration
	InviteTTL                time.Duration
	SMTP                     SMTP
	// CaptchaSecret enables the proof-of-work captcha (empty: disabled).
	CaptchaSecret     Secret
	CaptchaDifficulty int

	TLS           TLS
	RunnerRelease RunnerRelease
	Autoscale     Autoscale
	Observability Observability

	// Notices are adjustments made while loading (e.g. a value raised to its
	// floor); the server logs them at boot.
	Notices []string
}

// Agent holds the container limits applied to every agent.
type Agent struct {
	Network             string
	MemoryBytes         int64
	NanoCPUs            int64
	PidsLimit           int64
	ReadOnlyRootFS      bool
	TmpfsTmpMB          int64
	TmpfsRunMB          int64
	TmpfsHomeMB         int64
	TestDB              bool
	TestDBImage         string
	AttachmentsFileWait time.Duration
	TaskTimeout         time.Duration
	// What one run stores of its output (SERVICE_RUN_OUTPUT_MAX_*).
	OutputBytes, OutputLines int64
	OutputLineBytes          int
}

// TLS holds the certificate paths; all empty means plain HTTP.
type TLS struct {
	CertPath     string
	KeyPath      string
	ClientCAPath string
}

// Enabled reports whether the server serves HTTPS.
func (t TLS) Enabled() bool { return t.CertPath != "" }

// RunnerRelease is the release feed for the installer redirects.
type RunnerRelease struct {
	Version      string
	DownloadBase string
}

// Configured reports whether both release settings are present.
func (r RunnerRelease) Configured() bool { return r.Version != "" && r.DownloadBase != "" }

// Autoscale configures the local-container runner autoscaler.
type Autoscale struct {
	Enabled  bool
	Min      int
	Max      int
	Image    string
	Cooldown time.Duration
	Network  string
}

// IsProd reports production mode.
func (c *Config) IsProd() bool { return c.Mode == ModeProd }

var instanceIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Load reads the hub configuration. The error joins one line per problem.
func Load(lookup Lookup) (*Config, error) {
	cfg, r := load(lookup)
	if err := r.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func load(lookup Lookup) (*Config, *reader) {
	r := newReader(lookup)
	c := &Config{}

	switch strings.ToLower(r.str("MODE", "dev")) {
	case "prod", "production":
		c.Mode = ModeProd
	default:
		c.Mode = ModeDev
	}
	prod := c.Mode == ModeProd

	c.PublicURL = strings.TrimRight(r.str("PUBLIC_URL", ""), "/")
	if c.PublicURL != "" {
		r.httpURL("PUBLIC_URL", c.PublicURL)
	} else if prod {
		r.failf("PUBLIC_URL", "required in production")
	}

	for _, o := range r.list("CORS_ALLOWED_ORIGINS") {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			r.failf("CORS_ALLOWED_ORIGINS", "%q is not an origin like https://app.example.com", o)
			continue
		}
		c.CORSAllowedOrigins = append(c.CORSAllowedOrigins, u.Scheme+"://"+u.Host)
	}

	c.DataDir = r.str("SERVICE_DATA_DIR", "./data")
	if target, err := dburl.ParseURL(r.str("DATABASE_URL", ""), c.DataDir); err != nil {
		r.failf("DATABASE_URL", "%v", err)
	} else {
		c.Database = target
	}
	c.Database.PoolSize = int(r.integer("SERVICE_DB_POOL_SIZE", 0, 1, 1000))

	switch lvl := r.oneOf("SERVICE_LOG_LEVEL", "info", "debug", "info", "warn", "error"); lvl {
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "warn":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		c.LogLevel = slog.LevelInfo
	}

	c.Port = int(r.integer("SERVER_PORT", 8080, 0, 65535))
	c.ListenAddr = r.str("SERVICE_LISTEN_ADDR", "")
	if c.ListenAddr != "" && c.ListenAddr != "localhost" {
		if _, err := netip.ParseAddr(strings.Trim(c.ListenAddr, "[]")); err != nil {
			r.failf("SERVICE_LISTEN_ADDR", "must be an IP address of this machine (127.0.0.1, ::1, 10.0.0.5) or localhost, not %q", c.ListenAddr)
		}
	}
	for _, p := range r.list("SERVICE_TRUSTED_PROXIES") {
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			addr, aerr := netip.ParseAddr(p)
			if aerr != nil {
				r.failf("SERVICE_TRUSTED_PROXIES", "%q is neither a CIDR (10.0.0.0/8) nor an address", p)
				continue
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		c.TrustedProxies = append(c.TrustedProxies, prefix.Masked())
	}
	c.SkipBootMigrations = r.boolean("SERVICE_SKIP_BOOT_MIGRATIONS", false)
	c.ShutdownLBDelay = r.seconds("SERVICE_SHUTDOWN_LB_DELAY_SECS", 5)
	c.ShutdownGrace = r.seconds("SERVICE_SHUTDOWN_GRACE_SECS", 20)

	c.AuthProvider = r.oneOf("AUTH_PROVIDER", "builtin", "builtin", "oidc")
	if s, ok := r.raw("SERVICE_JWT_SECRET"); ok {
		if len(s) < MinJWTSecretBytes {
			r.failf("SERVICE_JWT_SECRET", "must be at least %d bytes (got %d)", MinJWTSecretBytes, len(s))
		}
		c.JWTSecret = Secret(s)
	} else if prod {
		r.failf("SERVICE_JWT_SECRET", "required in production (at least %d bytes)", MinJWTSecretBytes)
	}
	for _, e := range r.list("SERVICE_INITIAL_ADMIN_EMAILS") {
		if at := strings.IndexByte(e, '@'); at <= 0 || at == len(e)-1 {
			r.failf("SERVICE_INITIAL_ADMIN_EMAILS", "%q is not an email address", e)
			continue
		}
		c.InitialAdminEmails = append(c.InitialAdminEmails, strings.ToLower(e))
	}
	if prod && len(c.InitialAdminEmails) == 0 && (c.AuthProvider == "builtin" || c.AuthProvider == "oidc") {
		r.failf("SERVICE_INITIAL_ADMIN_EMAILS", "required in production with AUTH_PROVIDER=%s", c.AuthProvider)
	}
	c.CookieSecure = r.boolean("AUTH_COOKIE_SECURE", prod)
	// On PostgreSQL replicas drop each other's entries through the
	// database's notifications, so the cache is exact there too.
	c.SessionCacheTTL = time.Duration(r.integer("SERVICE_SESSION_CACHE_SECS", 10, 0, 3600)) * time.Second
	c.Argon2MemoryKiB = uint32(r.integer("SERVICE_ARGON2_MEMORY_KIB", 32768, 64, 4*1024*1024))
	c.Argon2Time = uint32(r.integer("SERVICE_ARGON2_TIME", 2, 1, 100))
	if prod && c.Argon2MemoryKiB < MinProdArgon2MemoryKiB {
		r.failf("SERVICE_ARGON2_MEMORY_KIB", "%d is below the production minimum of %d", c.Argon2MemoryKiB, MinProdArgon2MemoryKiB)
	}
	if prod && c.Argon2Time < 2 {
		r.failf("SERVICE_ARGON2_TIME", "%d is below the production minimum of 2", c.Argon2Time)
	}

	c.SecretBackend = r.oneOf("SECRET_BACKEND", "auto", "auto", "env", "openbao")
	c.VaultKeys = Secret(r.str("SERVICE_VAULT_KEYS", ""))
	if spec := c.VaultKeys.Reveal(); spec != "" {
		if _, err := vaultkeys.Parse(spec); err != nil {
			r.failf("SERVICE_VAULT_KEYS", "%v", err)
		}
	}
	c.OpenBao = OpenBao{Addr: r.str("BAO_ADDR", ""), Token: Secret(r.str("BAO_TOKEN", "")), RoleID: r.str("BAO_ROLE_ID", ""),
		SecretID: Secret(r.str("BAO_SECRET_ID", "")), Namespace: r.str("BAO_NAMESPACE", ""),
		Mount: r.str("SERVICE_VAULT_MOUNT", "secret"), Prefix: r.str("SERVICE_VAULT_PREFIX", "slipway")}
	if c.OpenBao.Addr != "" {
		r.httpURL("BAO_ADDR", c.OpenBao.Addr)
	}
	switch {
	case c.SecretBackend == "openbao" && !c.OpenBao.HasAuth():
		r.failf("SECRET_BACKEND", "openbao needs BAO_ADDR and BAO_TOKEN, or BAO_ADDR, BAO_ROLE_ID and BAO_SECRET_ID")
	case c.SecretBackend == "auto" && c.OpenBao.HasAuth():
		c.SecretBackend = "openbao"
	case c.SecretBackend == "auto":
		c.SecretBackend = "env"
	}
	c.CalibrationSweepInterval = r.seconds("SERVICE_CALIBRATION_SWEEP_INTERVAL_SECS", 86400)
	c.CalibrationSweepMinAge = r.seconds("SERVICE_CALIBRATION_SWEEP_MIN_AGE_SECS", int64(c.CalibrationSweepInterval/time.Second))
	c.CalibrationRefreshInterval = r.seconds("SERVICE_CALIBRATION_REFRESH_INTERVAL_SECS", 21600)
	c.ResourceSecretReconcileInterval = r.seconds("SERVICE_RESOURCE_SECRET_RECONCILE_INTERVAL_SECS", 21600)
	c.SpeechProviderAPIKey = Secret(r.str("SPEECH_PROVIDER_API_KEY", ""))
	c.StripeWebhookSecret = Secret(r.str("STRIPE_WEBHOOK_SECRET", ""))
	c.StripeSecretKey = Secret(r.str("STRIPE_SECRET_KEY", ""))
	if c.StripeAPIBase = r.str("STRIPE_API_BASE", ""); c.StripeAPIBase != "" {
		r.httpURL("STRIPE_API_BASE", c.StripeAPIBase)
	}
	c.Payouts = Payouts{DebtorName: r.str("SERVICE_PAYOUT_DEBTOR_NAME", ""), DebtorIBAN: r.str("SERVICE_PAYOUT_DEBTOR_IBAN", ""),
		DebtorBIC: r.str("SERVICE_PAYOUT_DEBTOR_BIC", ""), PainVersion: r.oneOf("SERVICE_PAYOUT_PAIN_VERSION", "09", "09", "03"),
		Bank: r.oneOf("SERVICE_PAYOUT_BANK", "file", "file", "api"), Dir: r.str("SERVICE_PAYOUT_DIR", filepath.Join(c.DataDir, "payouts")),
		BankURL: r.str("SERVICE_PAYOUT_BANK_URL", ""), BankToken: Secret(r.str("SERVICE_PAYOUT_BANK_TOKEN", ""))}
	if c.Payouts.BankURL != "" {
		r.httpURL("SERVICE_PAYOUT_BANK_URL", c.Payouts.BankURL)
	}
	if c.Payouts.Bank == "api" && c.Payouts.BankURL == "" {
		r.failf("SERVICE_PAYOUT_BANK", "api needs SERVICE_PAYOUT_BANK_URL")
	}
	c.LLMProviderAPIKey = Secret(r.str("LLM_PROVIDER_API_KEY", ""))
	c.LLMProviderBaseURL = strings.TrimRight(r.str("LLM_PROVIDER_BASE_URL", protocol.DefaultBaseURL), "/")
	r.httpURL("LLM_PROVIDER_BASE_URL", c.LLMProviderBaseURL)

	c.AgentBackend = r.oneOf("SERVICE_AGENT_BACKEND", "auto", "auto", "docker", "process")
	if prod && c.AgentBackend == "process" {
		r.failf("SERVICE_AGENT_BACKEND", "process runs agents without a container and is for development only")
	}
	c.DockerHost = r.str("DOCKER_HOST", "")
	c.AgentImage = r.str("SERVICE_AGENT_IMAGE", "")
	c.AgentBinary = r.str("SERVICE_AGENT_BINARY", "")
	c.RunRetentionDays = int(r.integer("SERVICE_RUN_RETENTION_DAYS", 30, 0, 36500))
	c.ProcessSandbox = r.oneOf("SERVICE_PROCESS_SANDBOX", "auto", "auto", "off")
	c.Agent = readAgent(r)
	c.MaxParallelTasksPerWorkspace = int(r.integer("MAX_PARALLEL_TASKS_PER_WORKSPACE", 3, 1, 10000))
	c.ErrorSinkDSN = Secret(r.str("SERVICE_ERROR_SINK_DSN", ""))
	c.HubMode = r.boolean("SERVICE_HUB_MODE", false)
	c.AgentExecution = r.oneOf("SERVICE_AGENT_EXECUTION", "", "fleet_only")

	// Unset: ResolveInstanceID derives one at boot and keeps it in the data
	// directory, so that two servers on one host never share an identity.
	c.InstanceID = r.str("SERVICE_INSTANCE_ID", "")
	if c.InstanceID != "" && !instanceIDPattern.MatchString(c.InstanceID) {
		r.failf("SERVICE_INSTANCE_ID", "%q must be 1-63 letters, digits, '.', '_' or '-'", c.InstanceID)
	}
	c.WorkerSlots = int(r.integer("SERVICE_WORKER_SLOTS", 32, 1, 10000))
	c.WorkerLease = r.seconds("SERVICE_WORKER_LEASE_SECS", 60)
	if c.WorkerLease < 5*time.Second || c.WorkerLease > time.Hour {
		r.failf("SERVICE_WORKER_LEASE_SECS", "must be between 5 and 3600 seconds")
	}
	c.HubEventRelay = r.boolean("SERVICE_HUB_EVENT_RELAY", false)
	c.RealtimePerAccount = int(r.integer("SERVICE_REALTIME_MAX_CONNECTIONS_PER_ACCOUNT", 32, 1, 100000))
	c.WorkflowHTTPAllowPrivate = r.boolean("SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", false)

	c.RunnerStale = r.seconds("SERVICE_RUNNER_STALE_SECS", 90)
	if c.RunnerStale < RunnerStaleFloor {
		c.Notices = append(c.Notices, fmt.Sprintf("SERVICE_RUNNER_STALE_SECS: %d is below the floor; raised to %d",
			int(c.RunnerStale/time.Second), int(RunnerStaleFloor/time.Second)))
		c.RunnerStale = RunnerStaleFloor
	}

	c.ToolApprovalTimeout = r.seconds("SERVICE_TOOL_APPROVAL_TIMEOUT_SECS", 86400)
	if c.ToolApprovalTimeout < time.Minute || c.ToolApprovalTimeout > 30*24*time.Hour {
		r.failf("SERVICE_TOOL_APPROVAL_TIMEOUT_SECS", "must be between 60 and 2592000 seconds")
	}
	c.UndoWindow = r.seconds("SERVICE_UNDO_WINDOW_SECS", 86400)
	c.UndoGrace = r.seconds("SERVICE_UNDO_GRACE_SECS", 30)
	if c.UndoWindow < time.Minute || c.UndoGrace > c.UndoWindow {
		r.failf("SERVICE_UNDO_WINDOW_SECS", "must be at least 60 seconds and at least SERVICE_UNDO_GRACE_SECS")
	}
	c.SMTP = SMTP{Host: r.str("SERVICE_SMTP_HOST", ""), Port: int(r.integer("SERVICE_SMTP_PORT", 587, 1, 65535)),
		Username: r.str("SERVICE_SMTP_USERNAME", ""), Password: Secret(r.str("SERVICE_SMTP_PASSWORD", "")),
		From: r.str("SERVICE_SMTP_FROM", ""), Security: r.oneOf("SERVICE_SMTP_SECURITY", "starttls", "starttls", "tls", "none")}
	if c.SMTP.Host != "" && c.SMTP.From == "" {
		r.failf("SERVICE_SMTP_FROM", "is required with SERVICE_SMTP_HOST (the sender address of Slipway's mail)")
	}
	c.CaptchaSecret = Secret(r.str("SERVICE_CAPTCHA_SECRET", ""))
	if n := len(c.CaptchaSecret); n > 0 && n < 16 {
		r.failf("SERVICE_CAPTCHA_SECRET", "must be at least 16 bytes (got %d)", n)
	}
	c.CaptchaDifficulty = int(r.integer("SERVICE_CAPTCHA_DIFFICULTY", 18, 1, 28))
	c.InviteTTL = r.seconds("SERVICE_INVITE_TTL_SECS", 7*86400)
	if c.InviteTTL < time.Minute || c.InviteTTL > 90*24*time.Hour {
		r.failf("SERVICE_INVITE_TTL_SECS", "must be between 60 and 7776000 seconds")
	}
	c.RunnerJWTLifetime = r.seconds("SERVICE_RUNNER_JWT_LIFETIME_SECS", 3600)
	if c.RunnerJWTLifetime < time.Minute || c.RunnerJWTLifetime > 24*time.Hour {
		r.failf("SERVICE_RUNNER_JWT_LIFETIME_SECS", "must be between 60 and 86400 seconds")
	}

	c.TLS = TLS{
		CertPath:     r.str("SERVICE_TLS_CERT_PATH", ""),
		KeyPath:      r.str("SERVICE_TLS_KEY_PATH", ""),
		ClientCAPath: r.str("SERVICE_TLS_CLIENT_CA_PATH", ""),
	}
	r.pair("SERVICE_TLS_CERT_PATH", c.TLS.CertPath, "SERVICE_TLS_KEY_PATH", c.TLS.KeyPath)
	if c.TLS.ClientCAPath != "" && (c.TLS.CertPath == "" || c.TLS.KeyPath == "") {
		r.failf("SERVICE_TLS_CLIENT_CA_PATH", "mutual TLS needs SERVICE_TLS_CERT_PATH and SERVICE_TLS_KEY_PATH")
	}

	c.RunnerRelease = RunnerRelease{
		Version:      r.str("SERVICE_RUNNER_VERSION", ""),
		DownloadBase: strings.TrimRight(r.str("SERVICE_RUNNER_DOWNLOAD_BASE", ""), "/"),
	}
	if c.RunnerRelease.DownloadBase != "" {
		r.httpURL("SERVICE_RUNNER_DOWNLOAD_BASE", c.RunnerRelease.DownloadBase)
	}

	c.Autoscale.Enabled = r.oneOf("SERVICE_RUNNER_AUTOSCALE", "off", "off", "on") == "on"
	c.Autoscale.Min = int(r.integer("SERVICE_RUNNER_AUTOSCALE_MIN", 0, 0, 10000))
	c.Autoscale.Max = int(r.integer("SERVICE_RUNNER_AUTOSCALE_MAX", int64(max(c.Autoscale.Min, 1)), 0, 10000))
	if c.Autoscale.Max < c.Autoscale.Min {
		r.failf("SERVICE_RUNNER_AUTOSCALE_MAX", "%d is below SERVICE_RUNNER_AUTOSCALE_MIN (%d)", c.Autoscale.Max, c.Autoscale.Min)
	}
	c.Autoscale.Image = r.str("SERVICE_RUNNER_AUTOSCALE_RUNNER_IMAGE", "")
	if c.Autoscale.Enabled && c.Autoscale.Image == "" {
		r.failf("SERVICE_RUNNER_AUTOSCALE_RUNNER_IMAGE", "required when SERVICE_RUNNER_AUTOSCALE=on")
	}
	c.Autoscale.Cooldown = r.seconds("SERVICE_RUNNER_AUTOSCALE_COOLDOWN_SECS", 60)
	c.Autoscale.Network = r.str("SERVICE_RUNNER_AUTOSCALE_NETWORK", "service-agents")
	c.Observability = readObservability(r, prod)

	return c, r
}

// LoadDatabase reads only what a database tool (`slipway migrate`) needs,
// so it runs without the serving settings that production otherwise demands.
func LoadDatabase(lookup Lookup) (dburl.Target, error) {
	r := newReader(lookup)
	dataDir := r.str("SERVICE_DATA_DIR", "./data")
	target, err := dburl.ParseURL(r.str("DATABASE_URL", ""), dataDir)
	if err != nil {
		r.failf("DATABASE_URL", "%v", err)
	}
	return target, r.err()
}

// readAgent reads the agent limits (the hub's and a runner's alike).
func readAgent(r *reader) Agent {
	return Agent{
		Network:             r.str("AGENT_NETWORK", "service-agents"),
		MemoryBytes:         r.integer("AGENT_MEMORY_BYTES", 2147483648, 6*1024*1024, math.MaxInt64),
		NanoCPUs:            r.integer("AGENT_NANO_CPUS", 2000000000, 1000000, math.MaxInt64),
		PidsLimit:           r.integer("AGENT_PIDS_LIMIT", 512, 1, math.MaxInt32),
		ReadOnlyRootFS:      r.boolean("AGENT_READ_ONLY_ROOTFS", true),
		TmpfsTmpMB:          r.integer("AGENT_TMPFS_TMP_MB", 512, 1, 1<<20),
		TmpfsRunMB:          r.integer("AGENT_TMPFS_RUN_MB", 64, 1, 1<<20),
		TmpfsHomeMB:         r.integer("AGENT_TMPFS_HOME_MB", 512, 1, 1<<20),
		TestDB:              r.boolean("SERVICE_AGENT_TEST_DB", false),
		TestDBImage:         r.str("AGENT_TEST_DB_IMAGE", "postgres:18"),
		AttachmentsFileWait: time.Duration(r.integer("ATTACHMENTS_FILE_WAIT_MS", 30000, 0, 3600000)) * time.Millisecond,
		TaskTimeout:         time.Duration(r.integer("AGENT_TASK_TIMEOUT_MINUTES", 90, 1, 7*24*60)) * time.Minute,
		OutputBytes:         r.integer("SERVICE_RUN_OUTPUT_MAX_BYTES", 16<<20, 1<<10, 1<<40),
		OutputLines:         r.integer("SERVICE_RUN_OUTPUT_MAX_LINES", 200_000, 1, 1<<40),
		OutputLineBytes:     int(r.integer("SERVICE_RUN_OUTPUT_MAX_LINE_BYTES", 64<<10, 256, 1<<20)),
	}
}

// SMTP is the outbound mail server (SERVICE_SMTP_*); no host: development,
// mail is logged and kept in the dev outbox.
type SMTP struct {
	Host     string
	Port     int
	Username string
	Password Secret
	From     string
	Security string // starttls, tls or none
}

// OpenBao reaches an OpenBao (or Vault) KV version 2 engine.
type OpenBao struct {
	Addr      string
	Token     Secret
	RoleID    string
	SecretID  Secret
	Namespace string
	Mount     string
	Prefix    string
}

// HasAuth reports whether an address and a token or an AppRole are set:
// SECRET_BACKEND=auto then picks openbao.
func (o OpenBao) HasAuth() bool {
	return o.Addr != "" && (o.Token != "" || (o.RoleID != "" && o.SecretID != ""))
}

// Payouts configure the marketplace's payouts: the platform's account the
// SEPA transfers are paid from, the pain.001 version the bank takes, and
// the bank connection (file: each batch written to Dir for upload, its
// pain.002 status report read back from there; api: the bank's payment
// API at BankURL).
type Payouts struct {
	DebtorName  string
	DebtorIBAN  string
	DebtorBIC   string
	PainVersion string // 09 or 03
	Bank        string // file or api
	Dir         string
	BankURL     string
	BankToken   Secret
}
