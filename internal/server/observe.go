package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"slipway/internal/buildinfo"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/httpx"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/telemetry"
	"slipway/internal/platform/telemetry/otlp"
)

// observer is a server's Prometheus registry: the process-wide metrics
// (telemetry.Collectors), this server's HTTP requests, and what is read
// when scraped (database pools, queue depth, runners, live connections).
type observer struct {
	reg      *prometheus.Registry
	requests *prometheus.HistogramVec
}

// observe builds the server's registry and wraps h (the whole chain,
// Observe outermost) in the request metrics and spans, unless nothing
// would read them.
func (s *Server) observe(h http.Handler) http.Handler {
	o := &observer{reg: prometheus.NewRegistry()}
	o.requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "slipway_http_request_duration_seconds",
		Help:    "HTTP requests by method, route pattern (never the path; unmatched: no route) and status, with their latency.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"method", "route", "status"})
	o.reg.MustRegister(o.requests,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "slipway_build_info", Help: "Always 1; the version is its label.",
			ConstLabels: prometheus.Labels{"version": buildinfo.Version}}, func() float64 { return 1 }),
		&stateCollector{s: s, queue: jobs.New(s.db, s.bus, clock.System{}, nil)},
	)
	// database/sql's pool statistics, one set per pool: SQLite's single
	// writer and its readers, PostgreSQL's one pool.
	if s.db.R == s.db.W {
		o.reg.MustRegister(collectors.NewDBStatsCollector(s.db.W, "postgres"))
	} else {
		o.reg.MustRegister(collectors.NewDBStatsCollector(s.db.W, "sqlite_writer"), collectors.NewDBStatsCollector(s.db.R, "sqlite_reader"))
	}
	for _, c := range telemetry.Collectors() {
		o.reg.MustRegister(c)
	}
	s.obs = o
	if s.cfg.Observability.MetricsAddr == "" && !s.cfg.Observability.Tracing {
		return h // SERVICE_METRICS_ADDR=off and no tracing: requests are not measured at all
	}
	return httpx.Instrument(o, h)
}

// Observe implements httpx.RequestMetrics.
func (o *observer) Observe(method, route string, status int, elapsed time.Duration) {
	o.requests.WithLabelValues(method, route, httpx.StatusLabel(status)).Observe(elapsed.Seconds())
}

// Registry is the server's metrics registry (tests gather from it).
func (s *Server) Registry() *prometheus.Registry { return s.obs.reg }

// MetricsHandler serves /metrics, and /debug/pprof/ when enabled, behind
// SERVICE_METRICS_TOKEN when one is set. It is served on its own listener
// (ServeMetrics), never on the API's.
func (s *Server) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.obs.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError, // one failed read must not hide the rest
	}))
	if s.cfg.Observability.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	token := s.cfg.Observability.MetricsToken.Reveal()
	if token == "" {
		return mux
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "a bearer token is required (SERVICE_METRICS_TOKEN)", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// ServeMetrics serves MetricsHandler on ln until ctx ends.
func (s *Server) ServeMetrics(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut) // a scrape in flight has five seconds; then the listener just closes
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// observeProcess starts what watches a serving process: the metrics
// listener (SERVICE_METRICS_ADDR) and, when an OTLP endpoint is set, the
// trace exporter. stop ends both, flushing the spans still buffered.
func (s *Server) observeProcess(ctx context.Context) (stop func(), err error) {
	o := s.cfg.Observability
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if o.Tracing {
		shutdown, err := otlp.Start(ctx, "slipway", s.cfg.InstanceID, s.log)
		if err != nil {
			return nil, err
		}
		stops = append(stops, shutdown)
		s.log.Info("tracing: exporting spans over OTLP/HTTP")
	}
	if o.MetricsAddr != "" {
		ln, err := net.Listen("tcp", o.MetricsAddr)
		switch {
		case err != nil && o.MetricsAddrDefault:
			s.log.Warn("metrics: the default address is taken (another server on this host?); serving no metrics: set SERVICE_METRICS_ADDR",
				"addr", o.MetricsAddr, "err", err)
		case err != nil:
			stop()
			return nil, fmt.Errorf("SERVICE_METRICS_ADDR: %w", err)
		default:
			mctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				if err := s.ServeMetrics(mctx, ln); err != nil {
					s.log.Error("metrics listener failed", "err", err)
				}
			}()
			stops = append(stops, func() { cancel(); <-done })
			s.log.Info("metrics: serving /metrics", "addr", ln.Addr().String(), "token", o.MetricsToken != "", "pprof", o.Pprof)
		}
	}
	return stop, nil
}

// stateCollector reads, when scraped, what is state rather than events:
// the queue's depth, the runners by status and this server's live
// connections.
type stateCollector struct {
	s     *Server
	queue *jobs.Queue
}

var (
	queueDepthDesc = prometheus.NewDesc("slipway_queue_jobs", "Unfinished jobs by kind and state: available (due now), scheduled (due later), running.",
		[]string{"kind", "state"}, nil)
	runnersDesc = prometheus.NewDesc("slipway_runners", "Remote runners by status (online, offline, draining, disabled).",
		[]string{"status"}, nil)
	realtimeDesc = prometheus.NewDesc("slipway_realtime_connections", "Open WebSockets and event streams on this server.", nil, nil)
)

// stateTimeout bounds the reads of one scrape.
const stateTimeout = 5 * time.Second

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- runnersDesc
	ch <- realtimeDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	if ds, err := c.queue.Depths(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(queueDepthDesc, err)
	} else {
		for _, d := range ds {
			ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(d.Jobs), d.Kind, d.State)
		}
	}
	if r := c.s.Services.Runners; r != nil {
		if counts, err := r.CountByStatus(ctx); err != nil {
			ch <- prometheus.NewInvalidMetric(runnersDesc, err)
		} else {
			for status, n := range counts {
				ch <- prometheus.MustNewConstMetric(runnersDesc, prometheus.GaugeValue, float64(n), status)
			}
		}
	}
	if h := c.s.Services.Realtime; h != nil {
		ch <- prometheus.MustNewConstMetric(realtimeDesc, prometheus.GaugeValue, float64(h.Connections()))
	}
}
