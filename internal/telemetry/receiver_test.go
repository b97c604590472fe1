package telemetry_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"

	"github.com/airlockhq/airlock/internal/testenv"
)

// A got is one log record as a collector received it.
type got struct {
	Service      string // the resource's service.name
	Scope        string
	EventName    string
	Body         any
	Severity     int32
	SeverityText string
	Time         time.Time
	Attrs        map[string]any
}

// A receiver is an OTLP collector on the loopback interface that keeps
// what it is sent.
type receiver struct {
	mu      sync.Mutex
	records []got
	paths   []string
	headers []http.Header
}

func (rc *receiver) add(req *collogspb.ExportLogsServiceRequest) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rl := range req.GetResourceLogs() {
		service, _ := anyValue(findAttr(rl.GetResource().GetAttributes(), "service.name")).(string)
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				attrs := map[string]any{}
				for _, kv := range lr.GetAttributes() {
					attrs[kv.GetKey()] = anyValue(kv.GetValue())
				}
				rc.records = append(rc.records, got{
					Service:      service,
					Scope:        sl.GetScope().GetName(),
					EventName:    lr.GetEventName(),
					Body:         anyValue(lr.GetBody()),
					Severity:     int32(lr.GetSeverityNumber()),
					SeverityText: lr.GetSeverityText(),
					Time:         time.Unix(0, int64(lr.GetTimeUnixNano())).UTC(),
					Attrs:        attrs,
				})
			}
		}
	}
}

// Records returns what was received so far.
func (rc *receiver) Records() []got {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]got(nil), rc.records...)
}

func findAttr(kvs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue()
		}
	}
	return nil
}

// anyValue turns an OTLP value into the Go value it carries; nil for the
// empty value.
func anyValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case nil:
		return nil
	default:
		return v.String()
	}
}

// serveHTTP starts an OTLP/HTTP receiver on 127.0.0.1 that answers status
// (and body) to every request after keeping it. It is stopped when the
// test ends.
func serveHTTP(t *testing.T, status int, body string) (*receiver, string) {
	t.Helper()
	rc := &receiver{}
	url := testenv.ServeReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		var req collogspb.ExportLogsServiceRequest
		if err := testenv.DecodeOTLP(r, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.paths = append(rc.paths, r.URL.Path)
		rc.headers = append(rc.headers, r.Header.Clone())
		rc.mu.Unlock()
		if status != http.StatusOK {
			http.Error(w, body, status)
			return
		}
		rc.add(&req)
		testenv.AnswerOTLP(w, &collogspb.ExportLogsServiceResponse{})
	})
	return rc, url
}

// serveHanging starts an OTLP/HTTP receiver on 127.0.0.1 that never
// answers until the test ends.
func serveHanging(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: Close waits for handlers
	return srv.URL
}

// downURL returns a loopback URL on which nothing listens.
func downURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// grpcReceiver is the OTLP/gRPC logs service.
type grpcReceiver struct {
	collogspb.UnimplementedLogsServiceServer
	rc *receiver
}

func (g grpcReceiver) Export(_ context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	g.rc.add(req)
	return &collogspb.ExportLogsServiceResponse{}, nil
}

// serveGRPC starts an OTLP/gRPC receiver on 127.0.0.1, stopped when the
// test ends.
func serveGRPC(t *testing.T) (*receiver, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc := &receiver{}
	srv := grpc.NewServer()
	collogspb.RegisterLogsServiceServer(srv, grpcReceiver{rc: rc})
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return rc, "http://" + l.Addr().String()
}

// clearEnv unsets, for the test, every OpenTelemetry variable the machine
// running it may have set.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "")
		}
	}
}

// setEnv sets env for the test, after clearing the rest.
func setEnv(t *testing.T, env map[string]string) {
	t.Helper()
	clearEnv(t)
	for k, v := range env {
		t.Setenv(k, v)
	}
}
