package testenv

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// A Span is one span as an OTLP collector received it.
type Span struct {
	Service       string // the resource's service.name
	Scope         string
	Name          string
	TraceID       string // 32 hex digits
	SpanID        string // 16 hex digits
	ParentSpanID  string // "" for a root span
	Kind          int32
	StatusCode    int32 // 0 unset, 1 ok, 2 error
	StatusMessage string
	Attrs         map[string]string // string values only
}

// A TraceReceiver is an OTLP/HTTP trace collector on the loopback
// interface that keeps the spans it is sent.
type TraceReceiver struct {
	mu    sync.Mutex
	spans []Span
}

// Spans returns the spans received so far.
func (rc *TraceReceiver) Spans() []Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Span(nil), rc.spans...)
}

// ServeTraces starts a TraceReceiver, stopped when the test ends, and
// returns it and its traces endpoint (http://127.0.0.1:PORT/v1/traces),
// for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.
func ServeTraces(t testing.TB) (*TraceReceiver, string) {
	t.Helper()
	rc := &TraceReceiver{}
	url := ServeReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		var req coltracepb.ExportTraceServiceRequest
		if err := DecodeOTLP(r, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.add(&req)
		AnswerOTLP(w, &coltracepb.ExportTraceServiceResponse{})
	})
	return rc, url + "/v1/traces"
}

// ServeReceiver starts h on 127.0.0.1, stopped when the test ends, and
// returns its URL (http://127.0.0.1:PORT).
func ServeReceiver(t testing.TB, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("receiver listens on %s, want loopback", srv.URL)
	}
	return srv.URL
}

// AnswerOTLP writes resp, the response to an OTLP/HTTP export request, as
// a collector answers.
func AnswerOTLP(w http.ResponseWriter, resp proto.Message) {
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// DecodeOTLP reads an OTLP/HTTP export request's protobuf body, gzipped
// or not, into msg.
func DecodeOTLP(r *http.Request, msg proto.Message) error {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return err
		}
		rd = zr
	}
	data, err := io.ReadAll(rd)
	if err != nil {
		return err
	}
	return proto.Unmarshal(data, msg)
}

func (rc *TraceReceiver) add(req *coltracepb.ExportTraceServiceRequest) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				attrs := map[string]string{}
				for _, kv := range s.GetAttributes() {
					attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
				}
				parent := ""
				if p := s.GetParentSpanId(); len(p) > 0 {
					parent = hex.EncodeToString(p)
				}
				rc.spans = append(rc.spans, Span{Service: service, Scope: ss.GetScope().GetName(), Name: s.GetName(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()), ParentSpanID: parent,
					Kind: int32(s.GetKind()), StatusCode: int32(s.GetStatus().GetCode()), StatusMessage: s.GetStatus().GetMessage(), Attrs: attrs})
			}
		}
	}
}
