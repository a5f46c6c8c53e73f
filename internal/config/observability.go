package config

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// DefaultMetricsAddr is where a server serves /metrics unless told
// otherwise: loopback only, on the port OpenTelemetry's Prometheus
// exporters use.
const DefaultMetricsAddr = "127.0.0.1:9464"

// MinMetricsTokenBytes is the shortest SERVICE_METRICS_TOKEN accepted.
const MinMetricsTokenBytes = 16

// Observability is how the server is watched (SERVICE_METRICS_*,
// SERVICE_PPROF, OTEL_*).
type Observability struct {
	// MetricsAddr is the host:port of the metrics listener ("" none).
	MetricsAddr string
	// MetricsAddrDefault: MetricsAddr is the default, so a port another
	// server on the host already holds is a warning, not a boot error.
	MetricsAddrDefault bool
	// MetricsToken, when set, is the bearer the metrics listener requires.
	MetricsToken Secret
	// Pprof serves net/http/pprof on the metrics listener.
	Pprof bool
	// Tracing: an OTLP endpoint is configured (the SDK reads the OTEL_*
	// variables themselves) and the SDK is not disabled.
	Tracing bool
}

var observabilityVars = []Var{
	{"SERVICE_METRICS_ADDR", DefaultMetricsAddr, "ours: `host:port` of a second listener that serves Prometheus metrics at `/metrics` (and pprof when enabled), apart from the API's; `off` disables it. The default port taken (another server on this host) is a warning; a port set here must be free"},
	{"SERVICE_METRICS_TOKEN", "", "ours: set (at least 16 bytes), the metrics listener answers only `Authorization: Bearer <token>`; required in production when `SERVICE_METRICS_ADDR` is not a loopback address"},
	{"SERVICE_PPROF", "false", "ours: serve Go's profiler at `/debug/pprof/` on the metrics listener (behind its token when one is set)"},
}

// tracingVars switch on the export of spans, by the server and by a
// runner alike.
var tracingVars = []Var{
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "", "OpenTelemetry: set, traces (HTTP → service → SQL → queue → worker) are exported over OTLP/HTTP to it; unset, tracing is off and costs nothing. The SDK honours the other standard variables (`OTEL_EXPORTER_OTLP_HEADERS`, `_TIMEOUT`, `_CERTIFICATE`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`)"},
	{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "", "OpenTelemetry: the traces endpoint itself (wins over the one above; also turns tracing on)"},
	{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf", "OpenTelemetry: only `http/protobuf` is built in (port 4318 on a collector); anything else is a boot error"},
	{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf", "OpenTelemetry: likewise, for traces"},
	{"OTEL_SDK_DISABLED", "false", "OpenTelemetry: true turns tracing off whatever else is set"},
}

// runnerTracingVars are the same variables as a runner reads them: its
// own spans, under the traces the hub started (the first one says so).
var runnerTracingVars = append([]Var{
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "", "OpenTelemetry: set, the runner exports the spans of its work over OTLP/HTTP to it, each in the trace of whoever queued the work (service `slipway-runner`); unset, it exports none and the hub's traces end at the claim. The SDK honours the same standard variables as the server's"},
}, tracingVars[1:]...)

func readObservability(r *reader, prod bool) Observability {
	var o Observability
	addr, set := r.raw("SERVICE_METRICS_ADDR")
	switch {
	case !set:
		o.MetricsAddr, o.MetricsAddrDefault = DefaultMetricsAddr, true
	case strings.EqualFold(addr, "off"):
	default:
		host, port, err := net.SplitHostPort(addr)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
			r.failf("SERVICE_METRICS_ADDR", "%q is not host:port (127.0.0.1:9464, [::1]:9464, :9464) or off", addr)
			break
		}
		if host != "" && host != "localhost" {
			if _, err := netip.ParseAddr(host); err != nil {
				r.failf("SERVICE_METRICS_ADDR", "the host of %q must be an IP address of this machine or localhost", addr)
				break
			}
		}
		o.MetricsAddr = addr
	}
	o.MetricsToken = Secret(r.str("SERVICE_METRICS_TOKEN", ""))
	if n := len(o.MetricsToken); n > 0 && n < MinMetricsTokenBytes {
		r.failf("SERVICE_METRICS_TOKEN", "must be at least %d bytes (got %d)", MinMetricsTokenBytes, n)
	}
	if prod && o.MetricsAddr != "" && o.MetricsToken == "" && !loopback(o.MetricsAddr) {
		r.failf("SERVICE_METRICS_TOKEN", "required in production when SERVICE_METRICS_ADDR (%s) is not a loopback address", o.MetricsAddr)
	}
	o.Pprof = r.boolean("SERVICE_PPROF", false)

	o.Tracing = readTracing(r)
	return o
}

// readTracing reports whether spans are exported: an OTLP endpoint is
// configured (the SDK reads the OTEL_* variables themselves) and the SDK
// is not disabled.
func readTracing(r *reader) bool {
	endpoint := r.str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", r.str("OTEL_EXPORTER_OTLP_ENDPOINT", ""))
	for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if p := r.str(name, "http/protobuf"); p != "http/protobuf" {
			r.failf(name, "%q is not built in: use http/protobuf (a collector's port 4318)", p)
		}
	}
	disabled := r.boolean("OTEL_SDK_DISABLED", false)
	return endpoint != "" && !disabled
}

// loopback reports whether a host:port listens on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}
