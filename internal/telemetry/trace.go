package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"
)

// TraceID returns the trace a call belongs to: the trace of the span in ctx
// when the caller traces its agent loop with OpenTelemetry, so that audit
// events join that trace, or else a new random trace id. It is 32 lower-case
// hex digits, as in W3C trace context.
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	var id [16]byte
	rand.Read(id[:])
	return hex.EncodeToString(id[:])
}
