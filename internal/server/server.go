// Package server assembles the hub: it wires configuration, database,
// services and routes into one http.Handler, and runs it with probes,
// TLS and a graceful shutdown.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"slipway/internal/auth"
	"slipway/internal/captcha"
	"slipway/internal/codefiles"
	"slipway/internal/commands"
	"slipway/internal/config"
	"slipway/internal/console"
	"slipway/internal/core"
	"slipway/internal/dispatch"
	"slipway/internal/executor"
	"slipway/internal/executor/process"
	"slipway/internal/mail"
	"slipway/internal/n8nimport"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/httpx"
	"slipway/internal/platform/outbound"
	"slipway/internal/platform/pubsub"
	"slipway/internal/platform/redact"
	"slipway/internal/platform/sweep"
	"slipway/internal/platform/vault"
	"slipway/internal/projects"
	"slipway/internal/repo"
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
	"slipway/web"
)

// ReadyTimeout bounds the readiness database ping (spec: two seconds).
const ReadyTimeout = 2 * time.Second

// Server is one hub process: routes, readiness state, the HTTP server and
// the execution core (dispatcher and in-process worker).
type Server struct {
	cfg        *config.Config
	log        *slog.Logger
	db         *db.DB
	bus        *pubsub.Bus
	mux        *httpx.Mux
	handler    http.Handler
	APIs       APIs
	Services   Services
	Dispatcher *dispatch.Dispatcher
	Worker     *worker.Worker
	Engine     *workflows.Engine
	backend    executor.Backend
	retention  *retention.Service
	draining   atomic.Bool
}

// New builds the services and the routes. It does not listen.
func New(cfg *config.Config, log *slog.Logger, d *db.DB) (*Server, error) {
	if cfg.InstanceID == "" {
		return nil, errors.New("server: the instance identity is not resolved (Boot does it)")
	}
	clk := clock.System{}
	bus := pubsub.New(d, log)
	ten := tenancy.NewService(d, clk, cfg.SessionCacheTTL, bus, log)
	ten.SetInvites(cfg.PublicURL, cfg.InviteTTL)
	authSvc, err := auth.NewService(d, clk, auth.Config{
		InitialAdminEmails: cfg.InitialAdminEmails,
		HashParams:         auth.HashParams{MemoryKiB: cfg.Argon2MemoryKiB, Time: cfg.Argon2Time, Threads: 1},
		Secret:             []byte(cfg.JWTSecret.Reveal()),
		CookieSecure:       cfg.CookieSecure,
		SessionCacheTTL:    cfg.SessionCacheTTL,
	}, ten, bus, log)
	if err != nil {
		bus.Close()
		return nil, err
	}
	ten.SetSessions(authSvc)
	sealer, err := vault.NewSealer([]byte(cfg.JWTSecret.Reveal()))
	if err != nil {
		bus.Close()
		return nil, err
	}
	outbox := mail.New(d, clk, sealer, mail.SMTP{Host: cfg.SMTP.Host, Port: cfg.SMTP.Port, Username: cfg.SMTP.Username,
		Password: cfg.SMTP.Password.Reveal(), From: cfg.SMTP.From, Security: cfg.SMTP.Security}, log)
	ten.SetMailer(outbox)
	authSvc.SetMail(outbox, cfg.PublicURL)
	captchaSvc := captcha.New(d, clk, []byte(cfg.CaptchaSecret.Reveal()), cfg.CaptchaDifficulty)
	authSvc.SetCaptcha(captchaSvc)
	proj := projects.NewService(d, clk, sealer)
	ten.OnWorkspaceCreated(proj)

	// The execution core: runs and event logs, the queue, the dispatcher
	// (the hub's side of the worker port) and this server's own worker.
	taskCfg := tasks.Config{HubMode: cfg.HubMode, FleetOnly: cfg.AgentExecution == "fleet_only", WorkspaceCap: cfg.MaxParallelTasksPerWorkspace, DefaultImage: cfg.AgentImage,
		LLMKey: cfg.LLMProviderAPIKey.Reveal(), DefaultTimeout: cfg.Agent.TaskTimeout,
		ApprovalTimeout: cfg.ToolApprovalTimeout}
	c := core.New(d, bus, clk, redact.New(cfg.JWTSecret.Reveal(), cfg.SpeechProviderAPIKey.Reveal(), cfg.LLMProviderAPIKey.Reveal()),
		proj, tenancy.Access{DB: d}, taskCfg, dispatch.Config{Lease: cfg.WorkerLease,
			Output: runs.OutputLimit{Bytes: cfg.Agent.OutputBytes, Lines: cfg.Agent.OutputLines}}, workflows.EngineConfig{Owner: "engine@" + cfg.InstanceID, Lease: cfg.WorkerLease,
			HTTP: outbound.Policy{AllowPrivate: cfg.WorkflowHTTPAllowPrivate}, Own: ownAddresses(cfg), ScriptImage: cfg.AgentImage}, log)
	runSvc, taskSvc, disp := c.Runs, c.Tasks, c.Dispatcher

	backend, binary, err := agentBackend(cfg, log)
	if err != nil {
		bus.Close()
		return nil, err
	}
	git, err := repo.New(cfg.DataDir)
	if err != nil {
		bus.Close()
		return nil, err
	}
	owner := worker.HubPrefix + cfg.InstanceID
	// Where the process backend can contain nothing, only instance
	// admins' code runs (DESIGN §10).
	var gate *codeGate
	var admit func(context.Context, string) error
	if pb, ok := backend.(*process.Backend); ok && !pb.Contained() {
		gate = &codeGate{ten: ten}
		admit = gate.admit
	}
	wk := worker.New(disp, backend, git, worker.Config{
		ID: owner, Slots: cfg.WorkerSlots, AgentBinary: binary, Labels: map[string]string{executor.InstanceLabel: owner},
		Limits: executor.Limits{MemoryBytes: cfg.Agent.MemoryBytes, NanoCPUs: cfg.Agent.NanoCPUs, PidsLimit: cfg.Agent.PidsLimit,
			ReadOnlyRootFS: cfg.Agent.ReadOnlyRootFS, TmpfsTmpMB: cfg.Agent.TmpfsTmpMB, TmpfsRunMB: cfg.Agent.TmpfsRunMB,
			TmpfsHomeMB: cfg.Agent.TmpfsHomeMB, Network: cfg.Agent.Network},
		ScratchDir: filepath.Join(cfg.DataDir, "scripts"),
		Output:     worker.OutputLimits{Bytes: cfg.Agent.OutputBytes, Lines: cfg.Agent.OutputLines, Line: cfg.Agent.OutputLineBytes},
		Admit:      admit,
	}, log)

	runnerSvc := runners.NewService(d, clk, runners.Config{Secret: []byte(cfg.JWTSecret.Reveal()), Stale: cfg.RunnerStale,
		JWTLifetime: cfg.RunnerJWTLifetime, HubMode: cfg.HubMode, FleetOnly: cfg.AgentExecution == "fleet_only", Lease: cfg.WorkerLease},
		orgs{ten}, c.Queue, bus, log)
	c.Tasks.SetRouter(runnerSvc)

	codeFiles := codefiles.NewService(d, clk, c.Workflows)
	scriptSvc := scripts.NewService(d, clk, c.Runs, c.Queue, cfg.AgentImage)
	disp.Handle(scripts.RunJob, worker.WorkScript, scriptSvc.Runner(codeFiles))
	c.Engine.SetScripts(scriptSvc)
	c.Engine.SetCodeFiles(codeFiles)

	s := &Server{cfg: cfg, log: log, db: d, bus: bus, mux: httpx.NewMux(), Dispatcher: disp, Worker: wk, Engine: c.Engine, backend: backend,
		retention: retention.New(d, clk, cfg.RunRetentionDays, log)}
	trig := triggers.NewService(d, clk, sealer, c.Workflows, log, cfg.PublicURL)
	s.Services = Services{Auth: authSvc, Tenancy: ten, Projects: proj, Runs: runSvc, Tasks: taskSvc, Workflows: c.Workflows,
		Scripts: scriptSvc, Triggers: trig, Templates: templates.NewService(trig),
		Scans: workflowscan.NewService(proj, c.Workflows, git)}
	s.Services.CodeFiles = codeFiles
	s.Services.Approvals, s.Services.Conversations = c.Approvals, c.Conversations
	s.Services.Mail = outbox
	s.Services.Captcha = captchaSvc
	s.Services.Realtime = newHub(cfg.HubEventRelay, cfg.RealtimePerAccount, bus, c.Runs, c.Tasks, c.Approvals, log)
	s.Services.Live = liveAccess(authSvc, ten, cfg.PublicURL)
	s.Services.Commands = commands.NewService(c.Tasks, proj, c.Workflows, c.Approvals, ten)
	s.Services.Undo = undo.NewService(d, clk, c.Tasks, proj, git, undo.Config{Window: cfg.UndoWindow, Grace: cfg.UndoGrace}, log)
	s.Services.N8nImport = n8nimport.NewService(trig)
	s.Services.Runners, s.Services.RunnerPort, s.Services.RunnerClientCert = runnerSvc, disp, cfg.TLS.ClientCAPath != ""
	s.APIs = NewAPIs(s.mux, s.Services)
	s.mux.HandleFunc("GET /livez", s.livez)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.HandleFunc("GET /install-runner.sh", s.installer("install-runner.sh"))
	s.mux.HandleFunc("GET /install-runner.ps1", s.installer("install-runner.ps1"))
	mountE2E(s.mux)
	ui := console.New(web.Dist())
	ui.Mount(s.mux)
	authSvc.ExemptPages(func(r *http.Request) bool {
		if console.Shares(r.URL.Path) { // a page for a browser, an API answer for anyone else
			return console.WantsPage(r)
		}
		return console.IsPage(r.URL.Path)
	})
	var router http.Handler = httpx.Router(s.mux)
	if gate != nil {
		router = gate.middleware(router)
	}
	s.handler = httpx.Observe(log, httpx.Proxies(cfg.TrustedProxies, httpx.Recover(httpx.CORS(cfg.CORSAllowedOrigins,
		authSvc.Middleware(auth.AdminLayer(pages(ui, router)))))))
	return s, nil
}

// orgs resolves the organization of a runner endpoint for the runners
// service.
type orgs struct{ t *tenancy.Service }

func (o orgs) Resolve(ctx context.Context, u *actor.User, sel runners.Selector) (string, string, error) {
	org, err := o.t.Organization(ctx, u, tenancy.Selector{OrganizationID: sel.OrganizationID, WorkspaceID: sel.WorkspaceID})
	if err != nil {
		return "", "", err
	}
	return org.ID, org.Role, nil
}

// pages answers a browser navigating to a path that is both an API
// operation and a console page (GET /tasks/board) with the page.
func pages(ui *console.Console, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if console.Shares(r.URL.Path) {
			w.Header().Add("Vary", "Accept") // one address, two answers
			if console.WantsPage(r) {
				ui.Page(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Bus is the server's notification bus (tests wait for it to listen).
func (s *Server) Bus() *pubsub.Bus { return s.bus }

// Handler is the whole middleware chain and router.
func (s *Server) Handler() http.Handler { return s.handler }

// Mux exposes the router so tests can mount extra routes behind the same
// middleware.
func (s *Server) Mux() *httpx.Mux { return s.mux }

// StartDraining turns readiness to 503; requests keep being served.
func (s *Server) StartDraining() { s.draining.Store(true) }

// Probe answers reuse these values: probes are the hottest path there is.
// net/http never mutates header value slices, so sharing them is safe. No
// Cache-Control: a response without validators or expiry is not cacheable,
// and every extra header costs a sort on the write path.
var (
	okBody   = []byte(`{"status":"ok"}` + "\n")
	jsonType = []string{"application/json"}
)

func (s *Server) livez(w http.ResponseWriter, _ *http.Request) {
	w.Header()["Content-Type"] = jsonType
	w.Write(okBody)
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		httpx.WriteError(w, r, httpx.Unavailable("not ready: shutting down"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
	defer cancel()
	if err := s.db.Ping(ctx); err != nil {
		httpx.Logger(r.Context()).Warn("readiness: database does not answer", "err", err)
		httpx.WriteError(w, r, httpx.Unavailable("not ready: the database does not answer"))
		return
	}
	w.Header()["Content-Type"] = jsonType
	w.Write(okBody)
}

// installer redirects to the runner installer on the release feed:
// {SERVICE_RUNNER_DOWNLOAD_BASE}/{SERVICE_RUNNER_VERSION}/{file}.
func (s *Server) installer(file string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rel := s.cfg.RunnerRelease
		if !rel.Configured() {
			httpx.WriteError(w, r, httpx.Unavailable("runner installer unavailable: SERVICE_RUNNER_VERSION and SERVICE_RUNNER_DOWNLOAD_BASE must both be set"))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, rel.DownloadBase+"/"+rel.Version+"/"+file, http.StatusFound)
	}
}

// httpServer returns the configured net/http server.
func (s *Server) httpServer(tlsCfg *tls.Config) *http.Server {
	return &http.Server{
		Handler:           s.handler,
		TLSConfig:         tlsCfg,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// Serve serves on ln until ctx is cancelled, then shuts down as the spec
// orders it: readiness 503, wait the load-balancer delay, close listeners,
// give open requests up to the grace period. A value on hard skips the
// remaining waits (a second signal). It returns nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener, tlsCfg *tls.Config, hard <-chan struct{}) error {
	srv := s.httpServer(tlsCfg)
	// The execution core outlives the HTTP server: requests finish first,
	// then the worker stops its agents and gives their work back (it runs
	// again here after a restart, or on another replica), then the
	// dispatcher's rescuer stops.
	coreCtx, stopDispatcher := context.WithCancel(context.Background())
	workCtx, stopWorker := context.WithCancel(context.Background())
	dispatched, worked := make(chan struct{}), make(chan struct{})
	go func() {
		s.Dispatcher.Run(coreCtx)
		close(dispatched)
	}()
	go s.Services.Auth.Run(coreCtx)
	go sweep.Every(coreCtx, time.Hour, s.log, "spent captcha nonces deleted", s.Services.Captcha.Prune)
	go sweep.Every(coreCtx, time.Hour, s.log, "webhook delivery ids forgotten", s.Services.Triggers.Prune)
	go sweep.Every(coreCtx, time.Hour, s.log, "finished runs pruned", s.retention.Prune)
	go s.Services.Realtime.Run(coreCtx)
	go s.Engine.Run(workCtx)
	go s.Services.Triggers.Run(workCtx)
	go s.Services.Tenancy.Run(coreCtx)
	go s.Services.Runners.Run(coreCtx)
	go s.Services.Approvals.Run(coreCtx, time.Minute)
	go s.Services.Mail.Run(workCtx, 5*time.Second)
	go s.Services.Undo.Run(workCtx, 5*time.Second)
	ln = guardAgentNetworks(coreCtx, ln, s.backend, s.log)
	go func() {
		s.Worker.Run(workCtx)
		close(worked)
	}()
	defer func() {
		stopWorker()
		<-worked
		stopDispatcher()
		<-dispatched
		s.bus.Close()
	}()
	errc := make(chan error, 1)
	go func() {
		if tlsCfg != nil {
			errc <- srv.ServeTLS(ln, "", "")
		} else {
			errc <- srv.Serve(ln)
		}
	}()

	select {
	case err := <-errc:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}

	s.StartDraining()
	s.log.Info("shutting down: readiness is now 503", "lb_delay", s.cfg.ShutdownLBDelay, "grace", s.cfg.ShutdownGrace)
	if s.cfg.ShutdownLBDelay > 0 {
		select {
		case <-time.After(s.cfg.ShutdownLBDelay):
		case <-hard:
			s.log.Warn("second signal: skipping the load-balancer delay")
		}
	}

	graceCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	go func() {
		select {
		case <-hard:
			cancel()
		case <-graceCtx.Done():
		}
	}()
	// Browser sockets and event streams are told to reconnect (to another
	// replica) and end: they would hold the shutdown for its whole grace.
	s.Services.Realtime.Shutdown()
	s.log.Info("closing listeners; waiting for open requests")
	if err := srv.Shutdown(graceCtx); err != nil {
		s.log.Warn("open requests outlived the grace period; closing their connections", "err", err)
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("server: %w", err)
	}
	s.log.Info("shutdown complete")
	return nil
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
