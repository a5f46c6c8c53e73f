// Package otlp exports a process's spans over OTLP/HTTP: the server's and
// a remote runner's, each configured by the standard OTEL_* variables of
// its own environment. It is apart from package telemetry so that what
// only counts and starts spans does not link the SDK and its exporter.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"slipway/internal/buildinfo"
	"slipway/internal/platform/telemetry"
)

// Start installs an OTLP/HTTP exporter configured by the standard OTEL_*
// variables (endpoint, headers, timeout, certificate; sampler and batching
// through the SDK's own) behind a batching provider, as the provider of
// every span (telemetry.Use). service and instance name the process in its
// spans' resource (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win).
// stop turns tracing off and flushes the spans still buffered.
func Start(ctx context.Context, service, instance string, log *slog.Logger) (stop func(), err error) {
	// The SDK reports what it could not export here (a collector down):
	// into the process's log, not the standard logger.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing: the SDK reports an error", "err", err) }))
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
	}
	// Ours first: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", service),
		attribute.String("service.version", buildinfo.Version), attribute.String("service.instance.id", instance)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	telemetry.Use(tp)
	return func() {
		telemetry.Use(nil)
		flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Spans that cannot leave in five seconds are lost, as with the
		// exporter's own timeout.
		if err := tp.Shutdown(flush); err != nil {
			log.Warn("tracing: the last spans were not exported", "err", err)
		}
	}, nil
}
