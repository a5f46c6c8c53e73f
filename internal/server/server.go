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
	"strings"
	"sync/atomic"
	"time"

	"slipway/internal/app"
	"slipway/internal/apps"
	"slipway/internal/auth"
	"slipway/internal/config"
	"slipway/internal/console"
	"slipway/internal/dispatch"
	"slipway/internal/executor"
	"slipway/internal/platform/db"
	"slipway/internal/platform/httpx"
	"slipway/internal/platform/pubsub"
	"slipway/internal/platform/sweep"
	"slipway/internal/retention"
	"slipway/internal/worker"
	"slipway/internal/workflows"
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
	app        *app.App
	draining   atomic.Bool
	obs        *observer // metrics registry (observe.go)
}

// New builds the services (app.Build) and the routes. It does not listen.
func New(cfg *config.Config, log *slog.Logger, d *db.DB) (*Server, error) {
	a, err := app.Build(cfg, d, log, app.Options{})
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log, db: d, bus: a.Bus, mux: httpx.NewMux(), Dispatcher: a.Dispatcher, Worker: a.Worker, Engine: a.Engine,
		backend: a.Backend, retention: a.Retention, app: a, Services: a.Services}
	authSvc := a.Services.Auth
	s.APIs = NewAPIs(s.mux, s.Services)
	s.mux.HandleFunc("GET /livez", s.livez)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.HandleFunc("GET /install-runner.sh", s.installer("install-runner.sh"))
	s.mux.HandleFunc("GET /install-runner.ps1", s.installer("install-runner.ps1"))
	mountE2E(s.mux)
	// Deployed apps, under /a/ (their own pages: not the console's).
	s.mux.HandleFunc("GET /a/{rest...}", a.Services.Apps.Serve)
	ui := console.New(web.Dist(), cfg.PublicURL)
	ui.Mount(s.mux)
	authSvc.ExemptPages(func(r *http.Request) bool {
		if console.Shares(r.URL.Path) { // a page for a browser, an API answer for anyone else
			return console.WantsPage(r)
		}
		return console.IsPage(r.URL.Path) || console.Unknown(r, s.mux.Routes) || strings.HasPrefix(r.URL.Path, apps.ServePrefix+"/")
	})
	var router http.Handler = httpx.Router(s.mux)
	if a.Gate != nil {
		router = a.Gate.Middleware(router)
	}
	s.handler = httpx.Observe(log, httpx.Proxies(cfg.TrustedProxies, httpx.Recover(httpx.CORS(cfg.CORSAllowedOrigins,
		apps.SandboxCORS(auth.AppTokenRoute, authSvc.Middleware(auth.AdminLayer(pages(ui, s.mux, router))))))))
	s.handler = s.observe(s.handler) // metrics and trace spans of every request (observe.go)
	return s, nil
}

// pages answers a browser navigating to a path that is both an API
// operation and a console page (GET /tasks/board) with the page, and one
// navigating to a path nothing answers with the console's "does not
// exist" (404) instead of JSON.
func pages(ui *console.Console, mux *httpx.Mux, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if console.Shares(r.URL.Path) {
			w.Header().Add("Vary", "Accept") // one address, two answers
			if console.WantsPage(r) {
				ui.Page(w, r)
				return
			}
		}
		if console.Unknown(r, mux.Routes) {
			httpx.Routed(r, "GET /{unknown page}")
			ui.NotFound(w, r)
			return
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
		// The rescuer starts once this server's worker took back what it
		// held before a restart (bounded: a recovery that hangs does not
		// keep other replicas' dead work waiting for ever).
		select {
		case <-s.Worker.Recovered():
		case <-time.After(time.Minute):
			s.log.Warn("the worker's recovery takes over a minute; rescuing expired work anyway")
		case <-coreCtx.Done():
		}
		s.Dispatcher.Run(coreCtx)
		close(dispatched)
	}()
	go s.Services.Auth.Run(coreCtx)
	go sweep.Every(coreCtx, time.Hour, s.log, "spent captcha nonces deleted", s.Services.Captcha.Prune)
	go sweep.Every(coreCtx, time.Hour, s.log, "webhook delivery ids forgotten", s.Services.Triggers.Prune)
	go sweep.Every(coreCtx, time.Hour, s.log, "forge delivery ids forgotten", s.Services.Projects.PruneDeliveries)
	go sweep.Every(coreCtx, time.Hour, s.log, "finished runs pruned", s.retention.Prune)
	go sweep.Every(coreCtx, time.Hour, s.log, "old notifications pruned", s.Services.Notifications.Prune)
	go s.Services.Realtime.Run(coreCtx)
	go s.app.RewrapVault(coreCtx)
	go s.app.Reconciler.Run(coreCtx)
	go s.Engine.Run(workCtx)
	go s.Services.Triggers.Run(workCtx)
	go s.Services.Triggers.RunMail(workCtx)
	go func() {
		// The official catalog as this server ships it (another replica
		// seeding at once makes one of the two fail: logged, harmless).
		if err := s.Services.Marketplace.Seed(coreCtx); err != nil && coreCtx.Err() == nil {
			s.log.Warn("seeding the official marketplace source failed", "err", err)
		}
	}()
	go s.Services.Tenancy.Run(coreCtx)
	go s.Services.Billing.Run(coreCtx)
	go s.Services.Apps.Run(coreCtx)
	go s.Services.Tasks.RunPRs(workCtx)
	go sweep.Every(coreCtx, 10*time.Minute, s.log, "expired app uploads deleted", s.Services.AppRuns.PruneUploads)
	go sweep.Every(coreCtx, time.Minute, s.log, "pending payment events applied", s.Services.Billing.RetryPending)
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
