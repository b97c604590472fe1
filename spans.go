package airlock

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/airlockhq/airlock/internal/telemetry"
	"github.com/airlockhq/airlock/policy"
)

// instrumentation is the name of the tracer the host's spans come from.
const instrumentation = "github.com/airlockhq/airlock"

// spans makes a span of each call (Options.TracerProvider).
type spans struct {
	tracer trace.Tracer
	owned  *sdktrace.TracerProvider // the environment's exporter, shut down at close; nil otherwise
}

// openSpans picks the host's tracer: tp's, else the environment's OTLP
// exporter's, else the global provider's.
func openSpans(ctx context.Context, tp trace.TracerProvider, log *slog.Logger) (spans, error) {
	if tp != nil {
		return spans{tracer: tp.Tracer(instrumentation)}, nil
	}
	owned, err := telemetry.TracesFromEnv(ctx, &telemetry.Options{Logger: log})
	if err != nil {
		return spans{}, err
	}
	if owned != nil {
		return spans{tracer: owned.Tracer(instrumentation), owned: owned}, nil
	}
	return spans{tracer: otel.GetTracerProvider().Tracer(instrumentation)}, nil
}

// close sends the spans the environment's exporter still holds.
func (s spans) close() {
	if s.owned == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.owned.Shutdown(ctx)
}

// start begins the span of a request of method (tools/call,
// resources/read, prompts/get); end names and ends it.
func (s spans) start(ctx context.Context, method string) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, nil
	}
	return s.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("mcp.method.name", method)))
}

// endSpan ends q's span with what the request came to: its call id,
// class, server and tool (a name in the catalog only: a name the model
// made up is not repeated), never its arguments or URI.
func (h *Host) endSpan(q *request) {
	span := q.span
	if span == nil {
		return
	}
	defer span.End()
	if !span.IsRecording() {
		return
	}
	r := q.r
	attrs := []attribute.KeyValue{attribute.String("airlock.call_id", r.CallID), attribute.String("airlock.class", string(r.Status))}
	if q.tool != nil && r.Status != UnknownTool {
		attrs = append(attrs, attribute.String("airlock.server", q.tool.Server))
		switch q.kind {
		case policy.KindTool:
			span.SetName("tools/call " + q.tool.Name)
			attrs = append(attrs, attribute.String("gen_ai.tool.name", q.tool.Name), attribute.String("airlock.remote_tool", q.tool.Remote))
		case policy.KindPrompt:
			span.SetName("prompts/get " + q.tool.Name)
			attrs = append(attrs, attribute.String("mcp.prompt.name", q.tool.Name))
		}
	}
	if r.RecoveryID != "" {
		attrs = append(attrs, attribute.String("airlock.recovery_id", r.RecoveryID))
	}
	if r.Status != OK {
		attrs = append(attrs, attribute.String("error.type", string(r.Status)))
		span.SetStatus(codes.Error, string(r.Status))
	}
	span.SetAttributes(attrs...)
}
