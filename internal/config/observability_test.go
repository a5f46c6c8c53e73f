package config

import (
	"strings"
	"testing"
)

func TestObservability(t *testing.T) {
	dev := map[string]string{}
	cases := []struct {
		name    string
		env     map[string]string
		want    Observability
		wantErr string
	}{
		{name: "defaults: metrics on loopback, no tracing", env: dev,
			want: Observability{MetricsAddr: DefaultMetricsAddr, MetricsAddrDefault: true}},
		{name: "off", env: with(dev, "SERVICE_METRICS_ADDR", "off"), want: Observability{}},
		{name: "an address, a token, pprof", env: with(dev, "SERVICE_METRICS_ADDR", "[::1]:9100", "SERVICE_METRICS_TOKEN", strings.Repeat("t", 16), "SERVICE_PPROF", "true"),
			want: Observability{MetricsAddr: "[::1]:9100", MetricsToken: Secret(strings.Repeat("t", 16)), Pprof: true}},
		{name: "every interface in dev", env: with(dev, "SERVICE_METRICS_ADDR", ":9464"), want: Observability{MetricsAddr: ":9464"}},
		{name: "not host:port", env: with(dev, "SERVICE_METRICS_ADDR", "9464"), wantErr: "SERVICE_METRICS_ADDR"},
		{name: "a host name", env: with(dev, "SERVICE_METRICS_ADDR", "metrics.example.com:9464"), wantErr: "SERVICE_METRICS_ADDR"},
		{name: "a short token", env: with(dev, "SERVICE_METRICS_TOKEN", "short"), wantErr: "SERVICE_METRICS_TOKEN: must be at least 16"},
		{name: "production on loopback needs no token", env: prodBase(),
			want: Observability{MetricsAddr: DefaultMetricsAddr, MetricsAddrDefault: true}},
		{name: "production elsewhere needs a token", env: with(prodBase(), "SERVICE_METRICS_ADDR", "10.0.0.5:9464"), wantErr: "SERVICE_METRICS_TOKEN: required in production"},
		{name: "production elsewhere with a token", env: with(prodBase(), "SERVICE_METRICS_ADDR", "0.0.0.0:9464", "SERVICE_METRICS_TOKEN", strings.Repeat("t", 20)),
			want: Observability{MetricsAddr: "0.0.0.0:9464", MetricsToken: Secret(strings.Repeat("t", 20))}},
		{name: "an OTLP endpoint turns tracing on", env: with(dev, "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
			want: Observability{MetricsAddr: DefaultMetricsAddr, MetricsAddrDefault: true, Tracing: true}},
		{name: "so does a traces endpoint", env: with(dev, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4318/v1/traces"),
			want: Observability{MetricsAddr: DefaultMetricsAddr, MetricsAddrDefault: true, Tracing: true}},
		{name: "the SDK disabled", env: with(dev, "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318", "OTEL_SDK_DISABLED", "true"),
			want: Observability{MetricsAddr: DefaultMetricsAddr, MetricsAddrDefault: true}},
		{name: "grpc is not built in", env: with(dev, "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
			wantErr: "OTEL_EXPORTER_OTLP_PROTOCOL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Load(MapLookup(c.env))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one about %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Observability != c.want {
				t.Fatalf("got %+v, want %+v", cfg.Observability, c.want)
			}
		})
	}
}
