package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceContext is the W3C Trace Context propagation: traceparent and
// tracestate.
var traceContext propagation.TraceContext

// traced is a receiving middleware that puts the client's trace context
// in the context of a call, a read and a prompt get, so that the host's
// span of it (Options.TracerProvider) is a child of the client's: from the
// request's params._meta (traceparent and tracestate, as MCP clients
// propagate it, over stdio too), or else from the HTTP request's headers.
func (g *Gateway) traced(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call", "resources/read", "prompts/get":
			ctx = withTrace(ctx, req)
		}
		return next(ctx, method, req)
	}
}

// withTrace returns ctx with req's trace context, if it carries one.
func withTrace(ctx context.Context, req mcp.Request) context.Context {
	if p := req.GetParams(); p != nil {
		if meta := p.GetMeta(); meta != nil {
			if _, ok := meta["traceparent"].(string); ok {
				return traceContext.Extract(ctx, metaCarrier(meta))
			}
		}
	}
	if ex := req.GetExtra(); ex != nil && ex.Header != nil {
		return traceContext.Extract(ctx, propagation.HeaderCarrier(ex.Header))
	}
	return ctx
}

// traceOnly returns a context with nothing of ctx but its trace context:
// for a call that outlives its request.
func traceOnly(ctx context.Context) context.Context {
	return trace.ContextWithSpanContext(context.Background(), trace.SpanContextFromContext(ctx))
}

// metaCarrier reads the trace context from a request's _meta.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	v, _ := m[key].(string)
	return v
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
