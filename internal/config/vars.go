package config

import (
	"fmt"
	"strings"

	"slipway/internal/agents/protocol"
)

// Var documents one environment variable. The tables below are the single
// source for the README's configuration section (checked by a test) and a
// test asserts that Load reads exactly these names, so docs and parsing
// cannot drift apart.
type Var struct {
	Name    string
	Default string
	Meaning string
}

// agentVars are the agent limits the hub and a runner both read.
var agentVars = []Var{
	{"AGENT_NETWORK", "service-agents", "container network agents join"},
	{"AGENT_MEMORY_BYTES", "2147483648", "per-agent memory cap"},
	{"AGENT_NANO_CPUS", "2000000000", "per-agent CPU cap"},
	{"AGENT_PIDS_LIMIT", "512", "per-agent process limit"},
	{"AGENT_READ_ONLY_ROOTFS", "true", "read-only root filesystem for agents"},
	{"AGENT_TMPFS_TMP_MB", "512", "/tmp tmpfs ceiling in MiB"},
	{"AGENT_TMPFS_RUN_MB", "64", "/run tmpfs ceiling in MiB"},
	{"AGENT_TMPFS_HOME_MB", "512", "/home/agent tmpfs ceiling in MiB"},
	{"SERVICE_AGENT_TEST_DB", "false", "allow the per-task ephemeral database sidecar for tasks with `config.test_db`"},
	{"AGENT_TEST_DB_IMAGE", "postgres:18", "sidecar image"},
	{"ATTACHMENTS_FILE_WAIT_MS", "30000", "set inside the agent container: wait for its attachments file"},
	{"AGENT_TASK_TIMEOUT_MINUTES", "90", "hard per-task timeout"},
	{"SERVICE_RUN_OUTPUT_MAX_BYTES", "16777216", "ours: bytes of output (log lines, messages, tool calls and results) one run stores; past it one `output_truncated` event and the work goes on"},
	{"SERVICE_RUN_OUTPUT_MAX_LINES", "200000", "ours: output events one run stores, likewise"},
	{"SERVICE_RUN_OUTPUT_MAX_LINE_BYTES", "65536", "ours: one line of output; a longer one is stored in pieces"},
}

func join(parts ...[]Var) []Var {
	var out []Var
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// ServerVars are read by `slipway serve` (and the other hub-side commands).
var ServerVars = join([]Var{
	{"MODE", "dev", "`prod` or `production` enables production guards; any other value runs dev mode"},
	{"PUBLIC_URL", "", "public base URL (absolute http or https); required in production"},
	{"CORS_ALLOWED_ORIGINS", "", "comma-separated origins allowed to call the API from a browser"},
	{"DATABASE_URL", "SQLite at `$SERVICE_DATA_DIR/slipway.db`", "`postgres://…` or `postgresql://…` for PostgreSQL; `sqlite:<path>` or `file:<path>` for SQLite"},
	{"SERVICE_DB_POOL_SIZE", "twice the CPUs, at least 4", "ours: PostgreSQL connections one server opens (1-1000); raise it for a database on its own, larger machine"},
	{"SERVICE_DATA_DIR", "./data", "ours: directory for the SQLite database and the dev signing secret; created if missing"},
	{"SERVICE_LOG_LEVEL", "info", "ours: `debug`, `info`, `warn` or `error`"},
	{"SERVER_PORT", "8080", "listen port (0 picks a free port, logged at start)"},
	{"SERVICE_LISTEN_ADDR", "every interface", "ours: the address to listen on, e.g. `127.0.0.1` for a server behind a proxy on the same machine"},
	{"SERVICE_TRUSTED_PROXIES", "", "ours: comma-separated CIDRs or addresses of the reverse proxies in front; a request from one of them gets its client address from `X-Forwarded-For` (the last address not of a trusted proxy); from anyone else the header is ignored"},
	{"SERVICE_SKIP_BOOT_MIGRATIONS", "false", "true: only verify that every built-in migration is applied and refuse to start otherwise"},
	{"SERVICE_SHUTDOWN_LB_DELAY_SECS", "5", "seconds between SIGTERM (readiness 503) and closing listeners; 0 skips"},
	{"SERVICE_SHUTDOWN_GRACE_SECS", "20", "bound for open requests to finish after listeners close"},
	{"AUTH_PROVIDER", "builtin", "`builtin` or `oidc`"},
	{"SERVICE_JWT_SECRET", "generated in dev", "session-signing secret, at least 32 bytes; required in production; dev mode generates one and keeps it in the data dir (mode 0600)"},
	{"SERVICE_INITIAL_ADMIN_EMAILS", "", "comma-separated initial owner emails; required in production for `builtin` or `oidc`"},
	{"AUTH_COOKIE_SECURE", "true in prod, false in dev", "mark session cookies Secure"},
	{"SERVICE_SESSION_CACHE_SECS", "10", "ours: keep authenticated sessions and resolved workspaces in memory this long; sign-outs, deleted workspaces and other changes apply at once on every replica (PostgreSQL notifications carry them); 0 disables"},
	{"SERVICE_ARGON2_MEMORY_KIB", "32768", "ours: argon2id memory per password hash in KiB (production: at least 19456)"},
	{"SERVICE_ARGON2_TIME", "2", "ours: argon2id passes per password hash (production: at least 2)"},
	{"SECRET_BACKEND", "auto", "`openbao` or `env`; `auto` picks openbao when BAO_ADDR and its auth are set, else env"},
	{"SERVICE_VAULT_KEYS", "a key derived from SERVICE_JWT_SECRET", "ours: the env backend's key-encryption keys, `id:base64` (32 bytes each, `openssl rand -base64 32`), comma-separated, the first sealing; add a new key first and keep the old one until the boot log says every secret was re-encrypted, then remove it"},
	{"BAO_ADDR", "", "OpenBao (or Vault) address, e.g. `https://bao.internal:8200`"},
	{"BAO_TOKEN", "", "OpenBao token (or use AppRole)"},
	{"BAO_ROLE_ID", "", "OpenBao AppRole role id; with BAO_SECRET_ID instead of a token"},
	{"BAO_SECRET_ID", "", "OpenBao AppRole secret id"},
	{"BAO_NAMESPACE", "", "OpenBao namespace, when the server uses them"},
	{"SERVICE_VAULT_MOUNT", "secret", "ours: the KV version 2 mount Slipway writes to"},
	{"SERVICE_VAULT_PREFIX", "slipway", "ours: every secret lives under `<mount>/data/<prefix>/<workspace>/`; the orphan sweep never touches anything else"},
	{"SERVICE_CALIBRATION_SWEEP_INTERVAL_SECS", "86400", "model-chain calibration decision interval; 0 disables"},
	{"SERVICE_CALIBRATION_SWEEP_MIN_AGE_SECS", "the sweep interval", "minimum age of the last pass; 0 means every poll"},
	{"SERVICE_CALIBRATION_REFRESH_INTERVAL_SECS", "21600", "benchmark snapshot refresh; 0 disables"},
	{"SERVICE_RESOURCE_SECRET_RECONCILE_INTERVAL_SECS", "21600", "orphan resource-secret cleanup; 0 disables"},
	{"SPEECH_PROVIDER_API_KEY", "", "instance-wide speech-to-text key; env first, then the vault (`instance/speech-provider-api-key`, field `value`, under the OpenBao prefix)"},
	{"LLM_PROVIDER_API_KEY", "", "instance-wide fallback key for one model provider; env first, then the vault (`instance/llm-provider-api-key`, field `value`, under the OpenBao prefix)"},
	{"STRIPE_WEBHOOK_SECRET", "", "ours: the signing secret (`whsec_…`) of the Stripe webhook endpoint `/api/billing/webhooks/stripe`; without it no payment provider is configured and admins assign plans"},
	{"STRIPE_SECRET_KEY", "", "ours: Stripe's API key: with `STRIPE_WEBHOOK_SECRET`, owners subscribe through Stripe Checkout and manage billing in Stripe's portal; a plan's changed price is made at Stripe (a new price, the old one archived and still mapped)"},
	{"STRIPE_API_BASE", "Stripe's", "ours: another address for Stripe's API (a local double in tests)"},
	{"SERVICE_PAYOUT_DEBTOR_NAME", "", "ours: the account holder the marketplace's seller payouts are paid from (SEPA character set, at most 70); payout batches cannot be approved without the name, IBAN and BIC"},
	{"SERVICE_PAYOUT_DEBTOR_IBAN", "", "ours: that account's IBAN"},
	{"SERVICE_PAYOUT_DEBTOR_BIC", "", "ours: that account's BIC"},
	{"SERVICE_PAYOUT_PAIN_VERSION", "09", "ours: the SEPA credit transfer message payout files use: `09` (pain.001.001.09, the EPC's current guidelines) or `03` (pain.001.001.03)"},
	{"SERVICE_PAYOUT_BANK", "file", "ours: how payout batches reach the bank: `file` (each submitted batch written to `SERVICE_PAYOUT_DIR` for upload; reconcile reads the bank's pain.002 status report `<message id>.pain002.xml` from there) or `api` (the bank's payment API at `SERVICE_PAYOUT_BANK_URL`, with a TAN challenge when it asks one)"},
	{"SERVICE_PAYOUT_DIR", "`<SERVICE_DATA_DIR>/payouts`", "ours: the file bank's directory"},
	{"SERVICE_PAYOUT_BANK_URL", "", "ours: the api bank's base URL"},
	{"SERVICE_PAYOUT_BANK_TOKEN", "", "ours: the api bank's bearer token"},
	{"LLM_PROVIDER_BASE_URL", protocol.DefaultBaseURL, "ours: the OpenAI-compatible endpoint of that one provider; the instance key is sent there and nowhere else (an agent profile with another base_url needs its own key or a resource)"},
	{"SERVICE_AGENT_BACKEND", "auto", "ours: where agents run: `docker`, `process` (dev only, contained by the layers this host has: see below) or `auto` (docker when an engine answers, else process in dev)"},
	{"SERVICE_PROCESS_SANDBOX", "auto", "ours: what contains code on the process backend: `auto` (a per-job uid and private mounts when the server is root, Landlock where the kernel has it, bubblewrap where installed) or `off` (none: only workspaces whose members are all instance admins run code)"},
	{"DOCKER_HOST", "the Docker default socket", "Docker Engine endpoint for the docker backend"},
	{"SERVICE_AGENT_IMAGE", "", "ours: default agent container image (a profile's or project's image wins); tasks fail with a clear message when none is set"},
	{"SERVICE_AGENT_BINARY", "this binary if statically linked", "ours: statically linked slipway binary mounted into agent containers as the built-in agent"},
	{"SERVICE_RUN_RETENTION_DAYS", "30", "ours: days finished runs keep their rows and events (0-36500; 0 keeps them forever); the hourly sweep prunes older ones: finished workflow runs with their node runs, script runs, and the runs of finished tasks (the tasks stay), then gives SQLite's freed space back"},
}, agentVars, []Var{
	{"MAX_PARALLEL_TASKS_PER_WORKSPACE", "3", "concurrency cap per workspace"},
	{"SERVICE_ERROR_SINK_DSN", "", "error-tracking DSN; unset disables the sink"},
	{"SERVICE_HUB_MODE", "false", "dispatch to remote runners; false runs every task on the server"},
	{"SERVICE_AGENT_EXECUTION", "", "`fleet_only` fails a launch when no eligible runner takes it; unset falls back to the server"},
	{"SERVICE_INSTANCE_ID", "hostname plus a random suffix kept in the data dir", "stable identity, unique per server; containers carry `service.instance=hub@<id>` and a server only ever removes its own"},
	{"SERVICE_WORKER_SLOTS", "32", "ours: agents this server runs at once (the workspace and project caps apply as well)"},
	{"SERVICE_WORKER_LEASE_SECS", "60", "ours: how long a server holds running work without renewing it; work of a server that died is taken over this long after (5-3600)"},
	{"SERVICE_HUB_EVENT_RELAY", "false", "relay hub events across replicas"},
	{"SERVICE_REALTIME_MAX_CONNECTIONS_PER_ACCOUNT", "32", "ours: WebSockets and event streams one account may hold open on one server; past it 429 `too_many_requests`"},
	{"SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "false", "ours: let http_request and notify_webhook nodes call loopback, private and link-local addresses and this server's own (off: refused)"},
	{"SERVICE_RUNNER_STALE_SECS", "90", "heartbeat staleness before a runner goes offline; values below 45 are raised to 45"},
	{"SERVICE_TOOL_APPROVAL_TIMEOUT_SECS", "86400", "ours: how long a tool call an agent asks approval for waits before it times out (60-2592000); the agent is told `timed_out` and does not run it"},
	{"SERVICE_UNDO_WINDOW_SECS", "86400", "ours: how long after a task finished its published work may be undone (revert its commit, close its pull request, delete its branch)"},
	{"SERVICE_UNDO_GRACE_SECS", "30", "ours: how long an undo action waits before it runs (`POST /api/undo/{id}/execute` runs it at once)"},
	{"SERVICE_SMTP_HOST", "", "ours: outbound mail server; unset: mail is logged and kept in the dev outbox (`GET /api/admin/mail/outbox`)"},
	{"SERVICE_SMTP_PORT", "587", "ours: its port"},
	{"SERVICE_SMTP_USERNAME", "", "ours: SMTP user (PLAIN auth, over TLS only)"},
	{"SERVICE_SMTP_PASSWORD", "", "ours: SMTP password"},
	{"SERVICE_SMTP_FROM", "", "ours: sender address; required with SERVICE_SMTP_HOST"},
	{"SERVICE_SMTP_SECURITY", "starttls", "ours: `starttls`, `tls` (implicit, port 465) or `none` (a local relay)"},
	{"SERVICE_CAPTCHA_SECRET", "", "ours: HMAC key of the proof-of-work captcha (at least 16 bytes); set, a solved captcha is required to request reset, verification and magic-link mail, and lifts a sign-in throttle; unset: captcha disabled"},
	{"SERVICE_CAPTCHA_DIFFICULTY", "18", "ours: leading zero bits a captcha solution needs (1-28); each bit doubles the browser's work (18 is about a quarter second)"},
	{"SERVICE_INVITE_TTL_SECS", "604800", "ours: how long an organization invite stays valid (60-7776000); resending gives it a new token and term"},
	{"SERVICE_RUNNER_JWT_LIFETIME_SECS", "3600", "ours: lifetime of the `scrnj_` JWTs enrolled runners get (60-86400); runners refresh at about half"},
	{"SERVICE_TLS_CERT_PATH", "", "PEM certificate; with the key, serves HTTPS"},
	{"SERVICE_TLS_KEY_PATH", "", "PEM private key; both or neither"},
	{"SERVICE_TLS_CLIENT_CA_PATH", "", "PEM CA bundle; enables mutual TLS (needs certificate and key)"},
	{"SERVICE_RUNNER_VERSION", "", "runner release version for the installer redirects"},
	{"SERVICE_RUNNER_DOWNLOAD_BASE", "", "release feed base URL; with the version, enables the installer redirects"},
	{"SERVICE_RUNNER_AUTOSCALE", "off", "`off` or `on`: run a local-container runner autoscaler"},
	{"SERVICE_RUNNER_AUTOSCALE_MIN", "0", "floor of the runner count"},
	{"SERVICE_RUNNER_AUTOSCALE_MAX", "the floor, at least 1", "ceiling of the runner count"},
	{"SERVICE_RUNNER_AUTOSCALE_RUNNER_IMAGE", "", "image for spawned runners; required when autoscale is on"},
	{"SERVICE_RUNNER_AUTOSCALE_COOLDOWN_SECS", "60", "minimum seconds between scale actions"},
	{"SERVICE_RUNNER_AUTOSCALE_NETWORK", "service-agents", "network for spawned runners"},
}, observabilityVars, tracingVars)

// RunnerVars are read by `slipway runner`.
var RunnerVars = join([]Var{
	{"SERVICE_HUB_URL", "", "required; https unless plaintext is allowed"},
	{"SERVICE_RUNNER_TOKEN", "", "static `scrn_` bearer token; this or the enrollment token, never both"},
	{"SERVICE_RUNNER_ENROLLMENT_TOKEN", "", "single-use token redeemed at boot for a scoped `scrnj_` JWT"},
	{"SERVICE_RUNNER_LABELS", "", "capability labels, comma or space separated; folded to lowercase and deduplicated"},
	{"SERVICE_DATA_DIR", "./data", "ours: the runner state directory"},
	{"SERVICE_RUNNER_TOKEN_FILE", "runner-token in the state directory", "where the JWT persists (mode 0600)"},
	{"SERVICE_RUNNER_TOKEN_REFRESH_SECS", "0", "0 derives the cadence from about half the token lifetime"},
	{"SERVICE_RUNNER_NAME", "service-runner", "display name"},
	{"SERVICE_RUNNER_HEARTBEAT_SECS", "30", "heartbeat interval"},
	{"SERVICE_RUNNER_POLL_SECS", "3", "pause after an empty work poll"},
	{"SERVICE_RUNNER_ALLOW_INSECURE_TRANSPORT", "false", "permit a plaintext hub URL"},
	{"SERVICE_RUNNER_EXECUTION_BACKEND", "docker", "`docker`, `ssh-docker`, `raw-ssh-exec` (unsandboxed) or `microvm`; ours: `process` (development and tests only; contained like the hub's process backend where the host allows)"},
	{"SERVICE_RUNNER_MICROVM_CMD", "", "launcher command; required for `microvm`; run by `sh` with `{image}`, `{agent_type}`, `{name}`, `{workdir}`, `{mounts}` (`source:target:rw` or `:ro` words) and `{command}` replaced; its stdio is the agent's"},
	{"SERVICE_RUNNER_SLOTS", "4", "ours: work this runner runs at once"},
	{"DOCKER_HOST", "the Docker default socket", "Docker Engine endpoint for the `docker` backend"},
	{"SERVICE_AGENT_BINARY", "this binary if statically linked", "ours: statically linked slipway binary mounted into agent containers"},
}, agentVars, []Var{
	{"SERVICE_RUNNER_TLS_CLIENT_CERT_PATH", "", "client certificate for mutual TLS; both or neither"},
	{"SERVICE_RUNNER_TLS_CLIENT_KEY_PATH", "", "client key for mutual TLS; both or neither"},
	{"SERVICE_RUNNER_TLS_CA_PATH", "", "CA bundle pinning the hub certificate"},
	{"SERVICE_SSH_HOST", "", "`user@host:port`; required for both SSH backends"},
	{"SERVICE_SSH_KNOWN_HOSTS", "", "pinned known_hosts file; required for both SSH backends"},
	{"SERVICE_SSH_DOCKER_HOSTKEY_DELEGATED", "false", "must be true for `ssh-docker`"},
	{"SERVICE_SSH_KEY_PATH", "", "private key; required for `raw-ssh-exec`"},
	{"SERVICE_RUNNER_ALLOW_UNSANDBOXED", "false", "must be true for `raw-ssh-exec` (and for `process`)"},
	{"SERVICE_SSH_EXEC_AGENT_CMD", "", "required for `raw-ssh-exec`; template with `{image}` and `{agent_type}`; `$SLIPWAY_COMMAND` holds the agent's own command line"},
	{"SERVICE_SSH_INSECURE_HOST_KEY", "false", "`raw-ssh-exec` only: accept any host key"},
}, runnerTracingVars)

// MarkdownTable renders vars as the README's configuration table.
func MarkdownTable(vars []Var) string {
	var b strings.Builder
	b.WriteString("| Variable | Default | Meaning |\n|---|---|---|\n")
	for _, v := range vars {
		def := v.Default
		if def == "" {
			def = "—"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.Name, def, v.Meaning)
	}
	return b.String()
}
