package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TracesFromEnv returns a tracer provider that exports spans over OTLP, as
// the standard OpenTelemetry environment configures it, or nil if that
// environment asks for no trace export. It reads the environment as
// FromEnv does for logs, with the TRACES variables in place of the LOGS
// ones:
//
//   - Nothing is exported unless OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
//     OTEL_EXPORTER_OTLP_ENDPOINT is set, nor when OTEL_SDK_DISABLED is
//     "true" or OTEL_TRACES_EXPORTER is "none".
//   - OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL picks
//     "http/protobuf" (the default) or "grpc".
//   - The SDK reads the sampler (OTEL_TRACES_SAMPLER, its argument) and the
//     batching (OTEL_BSP_*); the exporter library the headers, timeout,
//     compression and certificates.
//
// Export failures go to opts.Logger, as FromEnv's do. The caller shuts
// the provider down, which sends what it holds.
func TracesFromEnv(ctx context.Context, opts *Options) (*sdktrace.TracerProvider, error) {
	exp, res, ok, err := otlpExporter(ctx, "TRACES", "trace",
		func(ctx context.Context) (sdktrace.SpanExporter, error) { return otlptracegrpc.New(ctx) },
		func(ctx context.Context) (sdktrace.SpanExporter, error) { return otlptracehttp.New(ctx) })
	if !ok || err != nil {
		return nil, err
	}
	exp = reportingSpans{SpanExporter: exp, rep: newReporter(opts, "spans")}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// reportingSpans logs the errors of exports through rep and returns none,
// so that nothing reaches OpenTelemetry's global handler (stderr).
type reportingSpans struct {
	sdktrace.SpanExporter
	rep *reporter
}

func (r reportingSpans) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := r.SpanExporter.ExportSpans(ctx, spans); err != nil {
		r.rep.report(err, len(spans))
	}
	return nil
}
