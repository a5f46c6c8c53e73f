// Package app is Slipway's composition root: Build turns a configuration
// and a database into every service, each given what it uses in its
// constructor, with the reactions of one domain to another's changes
// listed in one place (reactions.go). The server, the test stacks and the
// benchmarks build through it, so they run the wiring that ships.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	"slipway/internal/activity"
	"slipway/internal/admin"
	"slipway/internal/approvals"
	"slipway/internal/apps"
	"slipway/internal/attention"
	"slipway/internal/audit"
	"slipway/internal/auth"
	"slipway/internal/backlog"
	"slipway/internal/bank"
	"slipway/internal/billing"
	"slipway/internal/captcha"
	"slipway/internal/changes"
	"slipway/internal/codefiles"
	"slipway/internal/commands"
	"slipway/internal/commerce"
	"slipway/internal/config"
	"slipway/internal/conversations"
	"slipway/internal/dispatch"
	"slipway/internal/envvars"
	"slipway/internal/errorpages"
	"slipway/internal/executor"
	"slipway/internal/executor/process"
	"slipway/internal/inbox"
	"slipway/internal/mail"
	"slipway/internal/marketplace"
	"slipway/internal/n8nimport"
	"slipway/internal/notifications"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/outbound"
	"slipway/internal/platform/pubsub"
	"slipway/internal/platform/realtime"
	"slipway/internal/platform/redact"
	"slipway/internal/platform/vault"
	"slipway/internal/projects"
	"slipway/internal/proposals"
	"slipway/internal/repo"
	"slipway/internal/resources"
	"slipway/internal/retention"
	"slipway/internal/runners"
	"slipway/internal/runs"
	"slipway/internal/scripts"
	"slipway/internal/tasks"
	"slipway/internal/templates"
	"slipway/internal/tenancy"
	"slipway/internal/triggers"
	"slipway/internal/undo"
	"slipway/internal/worker"
	"slipway/internal/workflows"
	"slipway/internal/workflowscan"
	"slipway/internal/workport"
	"slipway/web"
)

// Services are what the API's operations call.
type Services struct {
	Backlog       *backlog.Service
	Notifications *notifications.Service
	Proposals     *proposals.Service
	Attention     *attention.Service
	Marketplace   *marketplace.Service
	Commerce      *commerce.Service
	Auth          *auth.Service
	Tenancy       *tenancy.Service
	Projects      *projects.Service
	Workflows     *workflows.Service
	Runs          *runs.Service
	Tasks         *tasks.Service
	Scripts       *scripts.Service
	Triggers      *triggers.Service
	CodeFiles     *codefiles.Service
	Templates     *templates.Service
	Scans         *workflowscan.Service
	N8nImport     *n8nimport.Service
	Runners       *runners.Service
	// Working with running agents.
	Approvals     *approvals.Service
	Conversations *conversations.Service
	Undo          *undo.Service
	Changes       *changes.Service
	Commands      *commands.Service
	Activity      *activity.Service
	Resources     *resources.Service
	EnvVars       *envvars.Service
	ErrorPages    *errorpages.Service
	Apps          *apps.Service
	AppRuns       *apps.Submissions
	Billing       *billing.Service
	Mail          *mail.Outbox
	Features      *admin.Features
	SEO           *admin.SEO
	Audit         *audit.Log
	Captcha       *captcha.Service
	Realtime      *realtime.Hub
	Live          realtime.Access
	// RunnerPort is the hub's side of the worker port the runner API
	// serves; RunnerClientCert makes that API require a client
	// certificate (SERVICE_TLS_CLIENT_CA_PATH is set).
	RunnerPort       runners.Port
	RunnerClientCert bool
}

// Parts are the settings of the execution core that Build derives from
// the configuration; Options.Tune may adjust them (tests shorten polls and
// leases).
type Parts struct {
	Tasks    tasks.Config
	Dispatch dispatch.Config
	Engine   workflows.EngineConfig
	Worker   worker.Config
}

// Options are what a caller of Build chooses beyond the configuration.
// The zero value is the server's.
type Options struct {
	Clock clock.Clock // nil: the system clock
	// Backend runs agents, scripts and code nodes, with AgentBinary the
	// agent binary it mounts (nil: chosen from the configuration).
	Backend     executor.Backend
	AgentBinary string
	// Git keeps the repositories (nil: under the data directory).
	Git *repo.Git
	// Redactor scrubs stored events (nil: the instance's own secrets).
	Redactor *redact.Redactor
	// Tune adjusts the derived settings before anything is built.
	Tune func(*Parts)
	// Vault keeps tenants' secrets (nil: as SECRET_BACKEND says).
	Vault vault.Backend
}

// App is everything Build made. Nothing runs until the caller starts it
// (server.Serve, or a test stack).
type App struct {
	Log      *slog.Logger
	Bus      *pubsub.Bus
	Services Services
	Queue    *jobs.Queue
	// The execution core: the dispatcher (the hub's side of the worker
	// port), the workflow engine and this server's own worker.
	Dispatcher *dispatch.Dispatcher
	Engine     *workflows.Engine
	Worker     *worker.Worker
	Backend    executor.Backend
	Git        *repo.Git
	Parts      Parts
	// tunnel carries Git sources' fetches through the outbound check.
	tunnel    *outbound.Tunnel
	Retention *retention.Service
	// Gate keeps tenant code off a process backend that contains nothing
	// (nil: the backend contains it).
	Gate *CodeGate
	// Vault keeps tenants' secrets; Reconciler sweeps its orphans.
	Vault      vault.Backend
	Reconciler *vault.Reconciler
}

// Build makes every service over d. It starts nothing; on an error, what
// it made is released.
func Build(cfg *config.Config, d *db.DB, log *slog.Logger, opts Options) (*App, error) {
	if cfg.InstanceID == "" {
		return nil, errors.New("app: the instance identity is not resolved (Boot does it)")
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.System{}
	}
	secret := []byte(cfg.JWTSecret.Reveal())
	sealer, err := vault.NewSealer(secret)
	if err != nil {
		return nil, err
	}
	backend, binary := opts.Backend, opts.AgentBinary
	if backend == nil {
		if backend, binary, err = agentBackend(cfg, log); err != nil {
			return nil, err
		}
	}
	git := opts.Git
	if git == nil {
		if git, err = repo.New(cfg.DataDir); err != nil {
			return nil, err
		}
	}
	store := opts.Vault
	if store == nil {
		if store, err = secretStore(cfg, d, clk, secret); err != nil {
			return nil, err
		}
	}
	// The instance-wide provider keys: env first, then the vault.
	keys := instanceKeys(store, map[string]string{InstanceLLMKey: cfg.LLMProviderAPIKey.Reveal(), InstanceSpeechKey: cfg.SpeechProviderAPIKey.Reveal()}, log)
	llmKey, speechKey := keys[InstanceLLMKey], keys[InstanceSpeechKey]
	red := opts.Redactor
	if red == nil {
		red = redact.New(cfg.JWTSecret.Reveal(), speechKey, llmKey, cfg.StripeSecretKey.Reveal(), cfg.StripeWebhookSecret.Reveal(),
			cfg.Payouts.BankToken.Reveal())
	}
	parts := derive(cfg, binary)
	parts.Tasks.LLMKey, parts.Tasks.LLMBase = llmKey, cfg.LLMProviderBaseURL
	if opts.Tune != nil {
		opts.Tune(&parts)
	}

	bus := pubsub.New(d, log)
	var relay realtime.Relay
	if cfg.HubEventRelay {
		relay = bus
	}
	hub := realtime.New(relay, log, cfg.RealtimePerAccount)
	// Every reaction of one domain to another's change goes through here;
	// its subscribers are set below, once they exist, before anything runs.
	re := &reactions{}

	if cfg.PublicURL == "" {
		log.Warn("SERVICE_PUBLIC_URL is unset: links in mail (invites, password resets, sign-in links) are absolute only for requests made to localhost; set it to the address people open")
	}
	outbox := mail.New(d, clk, sealer, mail.SMTP{Host: cfg.SMTP.Host, Port: cfg.SMTP.Port, Username: cfg.SMTP.Username,
		Password: cfg.SMTP.Password.Reveal(), From: cfg.SMTP.From, Security: cfg.SMTP.Security}, log)
	captchaSvc := captcha.New(d, clk, []byte(cfg.CaptchaSecret.Reveal()), cfg.CaptchaDifficulty)
	access := tenancy.Access{DB: d}
	// Plans and entitlements: every limit is decided by its resolver.
	var payments billing.Payments
	if secret := cfg.StripeWebhookSecret.Reveal(); secret != "" {
		payments = billing.Stripe{WebhookSecret: secret}
	}
	var prices billing.ProviderAPI
	var stripeAPI *billing.StripeAPI
	if key := cfg.StripeSecretKey.Reveal(); key != "" {
		stripeAPI = billing.NewStripeAPI(key, cfg.StripeAPIBase)
		prices = stripeAPI
	}
	bill := billing.NewService(billing.Config{PublicURL: cfg.PublicURL}, billing.Deps{DB: d, Clock: clk, Log: log, Bus: bus, Payments: payments, API: prices,
		Purchases: re})
	resSvc := resources.NewService(resources.Deps{DB: d, Clock: clk, Vault: store, Log: log, LLMKey: llmKey, LLMBase: cfg.LLMProviderBaseURL,
		Mailer: outbox, Members: access,
		Outbound: outbound.New(outbound.Policy{AllowPrivate: cfg.WorkflowHTTPAllowPrivate, Timeout: 15 * time.Second}, ownAddresses(cfg)...)})
	proj := projects.NewService(projects.Deps{DB: d, Clock: clk, Sealer: sealer, Remotes: git, React: re, Models: resSvc, Forges: resSvc, PublicURL: cfg.PublicURL, Events: re})
	ten := tenancy.NewService(tenancy.Config{CacheTTL: cfg.SessionCacheTTL, PublicURL: cfg.PublicURL, InviteTTL: cfg.InviteTTL},
		tenancy.Deps{DB: d, Clock: clk, Log: log, Bus: bus, Mailer: outbox, Reactions: re, Plans: bill})
	authSvc, err := auth.NewService(auth.Config{
		InitialAdminEmails: cfg.InitialAdminEmails,
		HashParams:         auth.HashParams{MemoryKiB: cfg.Argon2MemoryKiB, Time: cfg.Argon2Time, Threads: 1},
		Secret:             secret,
		CookieSecure:       cfg.CookieSecure,
		SessionCacheTTL:    cfg.SessionCacheTTL,
		PublicURL:          cfg.PublicURL,
	}, auth.Deps{DB: d, Clock: clk, Tenancy: ten, Log: log, Bus: bus, Mailer: outbox, Captcha: captchaSvc})
	if err != nil {
		bus.Close()
		return nil, err
	}

	// The execution core: runs and event logs, the queue, the dispatcher
	// (the hub's side of the worker port), the engine and this server's
	// own worker.
	rs := runs.NewService(d, clk, red, hub, re)
	limits := tasks.Limits(parts.Tasks, proj)
	limits["resource"] = resources.UsesLimit // max_concurrent_uses, for every run that uses the resource
	q := jobs.New(d, bus, clk, limits)
	runnerSvc := runners.NewService(d, clk, runners.Config{Secret: secret, Stale: cfg.RunnerStale,
		JWTLifetime: cfg.RunnerJWTLifetime, HubMode: cfg.HubMode, FleetOnly: cfg.AgentExecution == "fleet_only", Lease: cfg.WorkerLease},
		orgs{ten}, q, bus, log, bill)
	in := inbox.New(d, bus, clk, re)
	ap := approvals.NewService(approvals.Deps{DB: d, Clock: clk, Inbox: in, Members: access, Hub: hub, Reactions: re, Log: log},
		parts.Tasks.ApprovalTimeout)
	ts := tasks.NewService(tasks.Deps{DB: d, Clock: clk, Projects: proj, Runs: rs, Queue: q, Router: runnerSvc,
		Approvals: ap, Inbox: in, Autonomy: access, Hub: hub, Reactions: re, Models: resSvc, Log: log}, parts.Tasks)
	envSvc := envvars.NewService(envvars.Deps{DB: d, Clock: clk, Vault: store, Log: log})
	parts.Dispatch.Env = envSvc
	disp := dispatch.New(d, q, rs, in, bus, parts.Dispatch, log)
	conv := conversations.NewService(d, clk, ts, in, re)
	scriptSvc := scripts.NewService(d, clk, rs, q, cfg.AgentImage)
	// Hosted apps: app nodes call their backends.
	pages := errorpages.NewService(errorpages.Deps{DB: d, Clock: clk})
	appSvc := apps.NewService(apps.Deps{DB: d, Clock: clk, Log: log, Quota: bill, Members: access, Viewers: ten, Bus: bus,
		ErrorPages: appErrorPages{pages: pages, db: d}, Secret: secret, Resources: resSvc, Queue: q, Runs: rs, Scripts: scriptSvc})
	eng := workflows.NewEngine(workflows.EngineDeps{DB: d, Runs: rs, Queue: q, Bus: bus, Clock: clk, Log: log,
		Agents: agents{ts}, Scripts: scriptSvc, CodeFiles: codefiles.Contents{}, Resources: resourceNodes{resSvc}, Apps: appSvc, Env: envSvc, Quota: bill, Reactions: re}, parts.Engine)
	wf := workflows.NewService(d, clk, rs, eng, proj, scriptSvc, bill)
	bl := backlog.NewService(backlog.Deps{DB: d, Clock: clk, Log: log, Projects: proj, Tasks: ts, Hub: hub})
	notes := notifications.NewService(notifications.Deps{DB: d, Clock: clk, Hub: hub, Mailer: outbox, PublicURL: cfg.PublicURL})
	props := proposals.NewService(proposals.Deps{DB: d, Clock: clk, Hub: hub, Reactions: re, Log: log,
		Kinds: map[string]proposals.Kind{"workflow": workflowProposals{wf}, "env_var": envVarProposals{envSvc}, "resource": resourceProposals{resSvc},
			"backlog_item": backlogProposals{bl}, "repo_change": repoChangeProposals{tasks: ts, projects: proj}}})
	*re = reactions{auth: authSvc, projects: proj, tasks: ts, workflows: wf, engine: eng, runs: rs, conversations: conv, inbox: in, backlog: bl,
		notifications: notes, proposals: props, access: access}

	// The work each kind of job carries, and who runs it.
	disp.Handle(tasks.JobKind, workport.WorkAgent, ts)
	disp.HandleLocal(workflows.RunJob, eng.Interrupted)
	disp.HandleLocal(workflows.TimerJob, eng.Interrupted)
	disp.Handle(workflows.CodeJob, workport.WorkScript, eng.Code())
	disp.Handle(workflows.NodeTestJob, workport.WorkScript, eng.NodeTests())
	disp.Handle(scripts.RunJob, workport.WorkScript, scriptSvc.Runner(codefiles.Contents{}))
	disp.Handle(apps.BuildJob, workport.WorkScript, appSvc.Builder())

	a := &App{Log: log, Bus: bus, Queue: q, Dispatcher: disp, Engine: eng, Backend: backend, Git: git,
		Parts: parts, Retention: retention.New(d, clk, cfg.RunRetentionDays, log), Vault: store,
		tunnel: outbound.NewTunnel(outbound.New(outbound.Policy{AllowPrivate: cfg.WorkflowHTTPAllowPrivate, Timeout: 15 * time.Second}, ownAddresses(cfg)...))}
	a.Reconciler = vault.NewReconciler(vault.ReconcileDeps{Backend: store, DB: d, Clock: clk, Log: log,
		Claims: map[string]vault.Claims{resources.SecretKind: resSvc.Claims, resources.RLSSecretKind: resSvc.ClaimsRLS, envvars.SecretKind: envSvc.Claims}}, cfg.ResourceSecretReconcileInterval)
	// Where the process backend can contain nothing, only instance
	// admins' code runs (DESIGN §10).
	if pb, ok := backend.(*process.Backend); ok && !pb.Contained() {
		a.Gate = &CodeGate{ten: ten}
		a.Parts.Worker.Admit = a.Gate.Admit
	}
	a.Worker = a.NewWorker()

	trig := triggers.NewService(d, clk, sealer, wf, conversationCards{backlog: bl, notifications: notes}, resSvc, log, cfg.PublicURL)
	a.Services = Services{Auth: authSvc, Tenancy: ten, Projects: proj, Runs: rs, Tasks: ts, Workflows: wf,
		Scripts: scriptSvc, Triggers: trig, Templates: templates.NewService(trig),
		Scans:     workflowscan.NewService(proj, wf, git),
		CodeFiles: codefiles.NewService(d, clk, wf),
		Approvals: ap, Conversations: conv, Mail: outbox, Captcha: captchaSvc, Features: admin.NewFeatures(withKeys(cfg, llmKey, speechKey)),
		SEO:      admin.NewSEO(web.Dist(), cfg.PublicURL, bill),
		Audit:    audit.NewLog(d),
		Realtime: hub, Live: liveAccess(authSvc, ten, cfg.PublicURL),
		Commands:  commands.NewService(ts, proj, wf, ap, props, ten),
		Undo:      undo.NewService(d, clk, ts, proj, git, undo.Config{Window: cfg.UndoWindow, Grace: cfg.UndoGrace}, log),
		Changes:   changes.NewService(ts, proj, git),
		Activity:  activity.NewService(d, clk),
		Resources: resSvc,
		EnvVars:   envSvc,
		Billing:   bill,
		Runners:   runnerSvc, RunnerPort: disp, RunnerClientCert: cfg.TLS.ClientCAPath != "",
	}
	a.Services.N8nImport = n8nimport.NewService(trig)
	a.Services.ErrorPages = pages
	a.Services.Backlog = bl
	a.Services.Notifications = notes
	a.Services.Proposals = props
	a.Services.Marketplace = marketplace.NewService(marketplace.Deps{DB: d, Clock: clk, Log: log, Scripts: scriptSvc, NodeTypes: wf, Workflows: wf,
		Refs: marketRefs{res: resSvc, apps: appSvc}, Apps: appSvc, Git: marketGit{git: git, tunnel: a.tunnel}, Commerce: commerce.Licenses{}, Reactions: re})
	a.Services.Commerce = commerce.NewService(commerce.Deps{DB: d, Clock: clk, Log: log, Sealer: sealer, Catalog: a.Services.Marketplace,
		Provider: payments != nil, PublicURL: cfg.PublicURL, Bank: payoutBank(cfg.Payouts), Runners: runnerSvc,
		Debtor: commerce.Debtor{Name: cfg.Payouts.DebtorName, IBAN: cfg.Payouts.DebtorIBAN, BIC: cfg.Payouts.DebtorBIC, Version: cfg.Payouts.PainVersion}})
	if stripeAPI != nil {
		a.Services.Commerce.Checkouts = stripeAPI
	}
	re.commerce = a.Services.Commerce
	a.Services.Attention = attention.NewService(attention.Deps{Approvals: ap, Workflows: wf, Proposals: props, Notifications: notes})
	a.Services.Apps = appSvc
	a.Services.AppRuns = apps.NewSubmissions(appSvc, appRuns{wf})
	streams(hub, rs, ts)
	return a, nil
}

// NewWorker is a fresh worker with the app's settings (a test stack
// restarts its worker with it).
func (a *App) NewWorker() *worker.Worker {
	return worker.New(a.Dispatcher, a.Backend, a.Git, a.Parts.Worker, a.Log)
}

// derive reads the execution core's settings from the configuration.
func derive(cfg *config.Config, binary string) Parts {
	owner := workport.HubPrefix + cfg.InstanceID
	return Parts{
		Tasks: tasks.Config{HubMode: cfg.HubMode, FleetOnly: cfg.AgentExecution == "fleet_only", WorkspaceCap: cfg.MaxParallelTasksPerWorkspace,
			DefaultImage: cfg.AgentImage, LLMKey: cfg.LLMProviderAPIKey.Reveal(), LLMBase: cfg.LLMProviderBaseURL, DefaultTimeout: cfg.Agent.TaskTimeout,
			ApprovalTimeout: cfg.ToolApprovalTimeout},
		Dispatch: dispatch.Config{Lease: cfg.WorkerLease, Output: runs.OutputLimit{Bytes: cfg.Agent.OutputBytes, Lines: cfg.Agent.OutputLines}},
		Engine: workflows.EngineConfig{Owner: "engine@" + cfg.InstanceID, Lease: cfg.WorkerLease,
			HTTP: outbound.Policy{AllowPrivate: cfg.WorkflowHTTPAllowPrivate}, Own: ownAddresses(cfg), ScriptImage: cfg.AgentImage},
		Worker: worker.Config{
			ID: owner, Slots: cfg.WorkerSlots, AgentBinary: binary, Labels: map[string]string{executor.InstanceLabel: owner},
			Limits: executor.Limits{MemoryBytes: cfg.Agent.MemoryBytes, NanoCPUs: cfg.Agent.NanoCPUs, PidsLimit: cfg.Agent.PidsLimit,
				ReadOnlyRootFS: cfg.Agent.ReadOnlyRootFS, TmpfsTmpMB: cfg.Agent.TmpfsTmpMB, TmpfsRunMB: cfg.Agent.TmpfsRunMB,
				TmpfsHomeMB: cfg.Agent.TmpfsHomeMB, Network: cfg.Agent.Network},
			ScratchDir: filepath.Join(cfg.DataDir, "scripts"),
			Output:     worker.OutputLimits{Bytes: cfg.Agent.OutputBytes, Lines: cfg.Agent.OutputLines, Line: cfg.Agent.OutputLineBytes},
		},
	}
}

// ownAddresses are this server's: its port on every local address and the
// public URL's host. Workflow nodes may not call them unless allowed.
func ownAddresses(cfg *config.Config) []string {
	own := []string{":" + strconv.Itoa(cfg.Port)}
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Host != "" {
		own = append(own, u.Host)
	}
	return own
}

// withKeys is the configuration with the instance keys as resolved (env,
// else vault): what the owner console's features tab reports.
func withKeys(cfg *config.Config, llm, speech string) *config.Config {
	c := *cfg
	c.LLMProviderAPIKey, c.SpeechProviderAPIKey = config.Secret(llm), config.Secret(speech)
	return &c
}

// The vault names of the instance-wide keys read when their env vars are
// unset: in OpenBao, <mount>/data/<prefix>/instance/<name>, field value.
const (
	InstanceLLMKey    = "llm-provider-api-key"
	InstanceSpeechKey = "speech-provider-api-key"
)

// instanceKeys are the instance-wide keys, by vault name: each env var's
// value, else the vault's (workspace "instance", which no workspace id can
// be), all read at once within 3 s. A vault that cannot be read leaves them
// unset, with a warning: the keys are optional, and boot must not wait on
// an unreachable vault for them.
func instanceKeys(store vault.Backend, env map[string]string, log *slog.Logger) map[string]string {
	out := map[string]string{}
	var missing []string
	for name, v := range env {
		if v != "" {
			out[name] = v
		} else {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	found, err := vault.GetMany(ctx, store, "instance", missing)
	if err != nil {
		log.Warn("the vault could not be read for the instance keys; they stay unset", "names", missing, "err", err)
		return out
	}
	for name, v := range found {
		out[name] = v
	}
	return out
}

// secretStore is the vault SECRET_BACKEND names (config resolved auto).
func secretStore(cfg *config.Config, d *db.DB, clk clock.Clock, instanceSecret []byte) (vault.Backend, error) {
	if cfg.SecretBackend == "openbao" {
		o := cfg.OpenBao
		return vault.NewOpenBao(vault.OpenBaoConfig{Addr: o.Addr, Token: o.Token.Reveal(), RoleID: o.RoleID, SecretID: o.SecretID.Reveal(),
			Namespace: o.Namespace, Mount: o.Mount, Prefix: o.Prefix})
	}
	var keys []vault.Key
	if spec := cfg.VaultKeys.Reveal(); spec != "" {
		var err error
		if keys, err = vault.ParseKeys(spec); err != nil {
			return nil, fmt.Errorf("SERVICE_VAULT_KEYS: %w", err)
		}
	} else {
		k, err := vault.InstanceKey(instanceSecret)
		if err != nil {
			return nil, err
		}
		keys = []vault.Key{k}
	}
	ring, err := vault.NewKeyring(keys...)
	if err != nil {
		return nil, err
	}
	return vault.NewEnv(d, ring, clk), nil
}

// RewrapVault moves, on the env backend, every secret an older key sealed
// onto the current key and says when the older keys may go.
func (a *App) RewrapVault(ctx context.Context) {
	env, ok := a.Vault.(*vault.Env)
	if !ok {
		return
	}
	stale, err := env.Stale(ctx)
	if err != nil || stale == 0 {
		return
	}
	a.Log.Info("vault: re-encrypting secrets sealed under an older key", "count", stale)
	moved, err := env.Rewrap(ctx)
	if err != nil {
		a.Log.Error("vault: re-encryption stopped; the older keys must stay in SERVICE_VAULT_KEYS", "moved", moved, "err", err)
		return
	}
	if left, err := env.Stale(ctx); err == nil && left == 0 {
		a.Log.Info("vault: every secret is sealed under the first key of SERVICE_VAULT_KEYS; the others can be removed", "moved", moved)
	}
}

// Close releases what Build holds open (the notification bus).
func (a *App) Close() {
	a.Bus.Close()
	if a.tunnel != nil {
		a.tunnel.Close()
	}
}

// appErrorPages renders an app's error page through the cascade: the
// app's own, its workspace's, the instance's, the built-in one.
type appErrorPages struct {
	pages *errorpages.Service
	db    *db.DB
}

func (a appErrorPages) Render(ctx context.Context, workspaceID string, appPage json.RawMessage, status int) ([]byte, error) {
	r, err := a.pages.Resolve(ctx, a.db.R, workspaceID, appPage)
	if err != nil {
		return nil, err
	}
	return errorpages.Render(r.Page, status), nil
}

func (a appErrorPages) Resolve(ctx context.Context, workspaceID string, appPage json.RawMessage) (json.RawMessage, string, error) {
	r, err := a.pages.Resolve(ctx, a.db.R, workspaceID, appPage)
	if err != nil {
		return nil, "", err
	}
	return r.Page, r.Source, nil
}

func (appErrorPages) Check(raw json.RawMessage) (json.RawMessage, error) {
	return errorpages.Check(raw)
}

// appRuns starts the workflow runs apps submit.
type appRuns struct{ wf *workflows.Service }

func (r appRuns) StartRunTx(ctx context.Context, tx *db.Tx, workspaceID string, createdBy *string, workflowID string, input, trigger json.RawMessage) (string, error) {
	started, err := r.wf.StartRunTx(ctx, tx, workspaceID, createdBy, workflowID, input, trigger)
	if err != nil {
		return "", err
	}
	return started.ID, nil
}

// marketRefs reads what a marketplace bundle's workflows reference: a
// resource's kind and name, an app's name (workspace-scoped).
type marketRefs struct {
	res  *resources.Service
	apps *apps.Service
}

func (m marketRefs) ResourceRef(ctx context.Context, ws *actor.Workspace, id string) (string, string, error) {
	r, err := m.res.Get(ctx, ws, id)
	if err != nil {
		return "", "", err
	}
	return r.Kind, r.Name, nil
}

func (m marketRefs) AppRef(ctx context.Context, ws *actor.Workspace, id string) (string, error) {
	a, err := m.apps.Get(ctx, ws, &actor.User{}, id)
	if err != nil {
		return "", err
	}
	return a.Name, nil
}

// marketGit reads Git sources with the host-side git: each source has a
// mirror of its own (keyed marketplace-<id>), fetched over https through
// the outbound tunnel, so every connection is checked where it lands.
type marketGit struct {
	git    *repo.Git
	tunnel *outbound.Tunnel
}

func (m marketGit) key(sourceID string) string { return "marketplace-" + sourceID }

func (m marketGit) Read(ctx context.Context, sourceID, url, branch string) (map[string][]byte, string, error) {
	proxy, err := m.tunnel.URL()
	if err != nil {
		return nil, "", err
	}
	if err := m.git.Sync(ctx, m.key(sourceID), repo.Remote{URL: url, Proxy: proxy, Shallow: true}); err != nil {
		return nil, "", err
	}
	if size := dirSize(m.git.MirrorPath(m.key(sourceID))); size > marketGitMaxMirror {
		m.Forget(sourceID)
		return nil, "", fmt.Errorf("the repository takes %d MiB on disk, more than the %d MiB a Git source may", size>>20, marketGitMaxMirror>>20)
	}
	files, commit, err := m.git.FilesWithin(ctx, m.key(sourceID), branch, marketplace.GitDir, []string{""}, marketplace.MaxGitFiles,
		marketplace.MaxGitFileBytes, marketplace.MaxGitBytes)
	if err != nil {
		return nil, "", err
	}
	out := make(map[string][]byte, len(files))
	for _, f := range files {
		if f.Content != nil { // nil: larger than a file may be (its version is refused)
			out[f.Path] = f.Content
		}
	}
	return out, commit, nil
}

func (m marketGit) Forget(sourceID string) { _ = m.git.RemoveMirror(m.key(sourceID)) }

// marketGitMaxMirror bounds a Git source's mirror on disk (its branches'
// tips, fetched shallow).
const marketGitMaxMirror = 256 << 20

// dirSize is the bytes of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// payoutBank is the bank connection payouts use.
func payoutBank(p config.Payouts) bank.Bank {
	if p.Bank == "api" {
		return bank.API{Base: p.BankURL, Token: p.BankToken.Reveal()}
	}
	return bank.File{Dir: p.Dir}
}
