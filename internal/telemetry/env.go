package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
)

// defaultServiceName is service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES says otherwise.
const defaultServiceName = "airlock"

// Protocols that OTEL_EXPORTER_OTLP_PROTOCOL may name.
const (
	protocolHTTP = "http/protobuf"
	protocolGRPC = "grpc"
)

// FromEnv returns an Exporter configured by the standard OpenTelemetry
// environment, or nil if that environment asks for no export:
//
//   - Nothing is exported unless OTEL_EXPORTER_OTLP_LOGS_ENDPOINT or
//     OTEL_EXPORTER_OTLP_ENDPOINT is set, nor when OTEL_SDK_DISABLED is
//     "true" or OTEL_LOGS_EXPORTER is "none".
//   - OTEL_EXPORTER_OTLP_LOGS_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL picks
//     "http/protobuf" (the default) or "grpc".
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES describe the service;
//     service.name defaults to "airlock".
//   - The exporter library reads the rest: headers, timeout, compression,
//     TLS certificates (the OTEL_EXPORTER_OTLP_[LOGS_]* variables), and the
//     SDK the batching (OTEL_BLRP_*).
//
// The endpoints and headers are checked here first, so that a malformed
// value is reported as an error that names the variable but never shows
// its value: headers carry credentials. An endpoint with a user or
// password in it is refused for the same reason.
//
// FromEnv does not connect: a collector that is down shows up later, as
// export failures in the log.
func FromEnv(ctx context.Context, opts *Options) (*Exporter, error) {
	exp, res, ok, err := otlpExporter(ctx, "LOGS", "log",
		func(ctx context.Context) (sdklog.Exporter, error) { return otlploggrpc.New(ctx) },
		func(ctx context.Context) (sdklog.Exporter, error) { return otlploghttp.New(ctx) })
	if !ok || err != nil {
		return nil, err
	}
	return newExporter(exp, res, opts), nil
}

// otlpExporter returns the exporter of signal (LOGS or TRACES) that the
// standard environment asks for, made by grpc or http as its protocol
// says, and the resource that describes the service; ok is false when the
// environment asks for no export of signal. what names the exporter in
// errors.
func otlpExporter[E any](ctx context.Context, signal, what string, grpc, http func(context.Context) (E, error)) (exp E, res *resource.Resource, ok bool, err error) {
	protocol, res, err := otlpEnv(ctx, signal)
	if protocol == "" || err != nil {
		return exp, nil, false, err
	}
	create := http
	if protocol == protocolGRPC {
		create = grpc
	}
	if exp, err = create(ctx); err != nil {
		return exp, nil, false, fmt.Errorf("create the OTLP %s %s exporter: %w", protocol, what, err)
	}
	return exp, res, true, nil
}

// otlpEnv reads the standard environment's settings for the OTLP export
// of signal (LOGS or TRACES): the protocol, "" when the environment asks
// for no export of it, and the resource that describes the service.
func otlpEnv(ctx context.Context, signal string) (string, *resource.Resource, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return "", nil, nil
	}
	switch v := strings.TrimSpace(os.Getenv("OTEL_" + signal + "_EXPORTER")); v {
	case "", "otlp":
	case "none":
		return "", nil, nil
	default:
		return "", nil, fmt.Errorf("OTEL_%s_EXPORTER=%s is not supported: use otlp or none", signal, v)
	}
	if getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return "", nil, nil
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_"+signal+"_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	if protocol == "" {
		protocol = protocolHTTP
	}
	if protocol != protocolHTTP && protocol != protocolGRPC {
		return "", nil, fmt.Errorf("OTLP protocol %q is not supported: set OTEL_EXPORTER_OTLP_PROTOCOL to %s or %s", protocol, protocolHTTP, protocolGRPC)
	}
	// The exporter libraries pass a value they cannot parse, whole, to
	// OpenTelemetry's global error handler, which prints it.
	for _, name := range []string{"OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if err := checkEndpoint(name, os.Getenv(name)); err != nil {
			return "", nil, err
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_" + signal + "_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"} {
		if err := checkHeaders(name, os.Getenv(name)); err != nil {
			return "", nil, err
		}
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", defaultServiceName)),
		resource.WithFromEnv(), // later detectors win: the environment overrides the default
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return "", nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES or OTEL_SERVICE_NAME: %w", err)
	}
	return protocol, res, nil
}

// getenv returns the first of the variables that is set and not blank, as
// the exporter libraries read them.
func getenv(names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

// checkEndpoint reports whether v, the value of the variable name, is an
// http or https URL with a host and no credentials. An empty v is unset.
// Errors name the variable and never quote the value.
func checkEndpoint(name, v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return fmt.Errorf("%s is not a URL: set it to http(s)://host:port", name)
	case u.User != nil:
		return fmt.Errorf("%s must not contain a user or password: put credentials in OTEL_EXPORTER_OTLP_HEADERS", name)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%s must start with http:// or https://", name)
	case u.Host == "":
		return fmt.Errorf("%s has no host: set it to http(s)://host:port", name)
	}
	return nil
}

// checkHeaders reports whether v, the value of the variable name, is a
// list of key=value pairs that the exporter libraries accept: comma
// separated, keys HTTP tokens, values percent-encoded. An empty v is unset.
// Errors name the variable and the position of the bad pair, never a key
// or value.
func checkHeaders(name, v string) error {
	if v == "" {
		return nil
	}
	for i, pair := range strings.Split(v, ",") {
		key, val, ok := strings.Cut(pair, "=")
		key = strings.TrimSpace(key)
		switch {
		case !ok:
			return fmt.Errorf("%s: pair %d has no '=': write key=value pairs separated by commas", name, i+1)
		case !isToken(key):
			return fmt.Errorf("%s: pair %d has an invalid header name", name, i+1)
		}
		if _, err := url.PathUnescape(val); err != nil {
			return fmt.Errorf("%s: the value of pair %d is not validly percent-encoded", name, i+1)
		}
	}
	return nil
}

// isToken reports whether s is a non-empty HTTP token (RFC 9110), the
// header names the exporter libraries accept.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", c):
		default:
			return false
		}
	}
	return true
}
