package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The process-wide metrics: counted where the work happens, deep in
// packages that are built once per process (the queue, the runs store,
// the workflow engine, sweeps). Every server registers them with its own
// registry (Collectors); per-server state (HTTP, database pools, queue
// depth, runners, live connections) is collected by the server itself.
var (
	claimLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "slipway_queue_claim_latency_seconds",
		Help:    "Time from a job becoming due (its run_at) to its claim, by job kind.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"kind"})
	jobsEnqueued = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_queue_enqueued_total",
		Help: "Jobs queued, by kind (counted when the enqueue's transaction commits).",
	}, []string{"kind"})
	runsStarted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_runs_started_total",
		Help: "Runs started, by kind (task, workflow, script).",
	}, []string{"kind"})
	runsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_runs_finished_total",
		Help: "Runs finished, by kind and terminal status.",
	}, []string{"kind", "status"})
	nodeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "slipway_workflow_node_duration_seconds",
		Help: "Time one workflow node took to execute, by node kind and outcome (waiting: it handed its work on, e.g. an agent or a human gate).",
		Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5,
			5, 10, 30, 60},
	}, []string{"kind", "status"})
	sweepPasses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_sweep_passes_total",
		Help: "Passes of the periodic sweeps, by sweep and outcome (ok or error).",
	}, []string{"sweep", "outcome"})
	sweepItems = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_sweep_items_total",
		Help: "What the sweeps handled (rows pruned, nonces deleted, …), by sweep.",
	}, []string{"sweep"})
	sweepDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "slipway_sweep_duration_seconds",
		Help:    "Time one sweep pass took, by sweep.",
		Buckets: []float64{.001, .01, .1, .5, 1, 5, 10, 30, 60, 300},
	}, []string{"sweep"})
	sweepLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "slipway_sweep_last_success_timestamp_seconds",
		Help: "Unix time of the last pass of each sweep that did not fail.",
	}, []string{"sweep"})
)

// Collectors are the process-wide metrics, for a server's registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{claimLatency, jobsEnqueued, runsStarted, runsFinished, nodeDuration,
		sweepPasses, sweepItems, sweepDuration, sweepLastSuccess}
}

// JobEnqueued counts a queued job of kind.
func JobEnqueued(kind string) { jobsEnqueued.WithLabelValues(kind).Inc() }

// JobClaimed records how long a claimed job of kind waited after it became
// due (a negative wait, from clocks apart, counts as none).
func JobClaimed(kind string, waited time.Duration) {
	claimLatency.WithLabelValues(kind).Observe(max(waited, 0).Seconds())
}

// RunStarted counts a run of kind that started.
func RunStarted(kind string) { runsStarted.WithLabelValues(kind).Inc() }

// RunFinished counts a run of kind that ended with status.
func RunFinished(kind, status string) { runsFinished.WithLabelValues(kind, status).Inc() }

// NodeExecuted records one workflow node's execution.
func NodeExecuted(kind, status string, took time.Duration) {
	nodeDuration.WithLabelValues(kind, status).Observe(took.Seconds())
}

// SweepPassed records one pass of the sweep named what: how many things it
// handled, how long it took, and whether it failed.
func SweepPassed(what string, n int, took time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	} else {
		sweepLastSuccess.WithLabelValues(what).Set(float64(time.Now().UnixNano()) / 1e9)
	}
	sweepPasses.WithLabelValues(what, outcome).Inc()
	if n > 0 {
		sweepItems.WithLabelValues(what).Add(float64(n))
	}
	sweepDuration.WithLabelValues(what).Observe(took.Seconds())
}
