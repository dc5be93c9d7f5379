package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/agentctl/agentctl/internal/buildinfo"
)

// CaptureContentEnv is the conventions' opt-in for message content.
const CaptureContentEnv = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// Protocols of the OTLP exporters (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// ErrNotConfigured means no OTLP endpoint is set in the environment.
var ErrNotConfigured = errors.New("otlp: no endpoint configured (set OTEL_EXPORTER_OTLP_ENDPOINT)")

// Config is what the standard OpenTelemetry environment variables ask for.
// The exporters read the rest themselves (headers, TLS, compression,
// per-signal endpoints).
type Config struct {
	Traces, Metrics                 bool
	TracesProtocol, MetricsProtocol string
	// Endpoint names the collector in messages.
	Endpoint       string
	CaptureContent bool
	// Timeout bounds one export (OTEL_EXPORTER_OTLP_TIMEOUT, default 10 s).
	Timeout  time.Duration
	getenv   func(string) string
	resource *sdkresource.Resource
}

// Enabled reports whether anything is exported.
func (c Config) Enabled() bool { return c.Traces || c.Metrics }

// ConfigFromEnv reads the OTEL_* variables through getenv. With none of
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT set (or OTEL_SDK_DISABLED=true), the
// Config is not Enabled and nothing is built.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{getenv: getenv, Timeout: 10 * time.Second}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return c, nil
	}
	base := getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	te, me := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
	c.Traces = (base != "" || te != "") && exporterOn(getenv("OTEL_TRACES_EXPORTER"))
	c.Metrics = (base != "" || me != "") && exporterOn(getenv("OTEL_METRICS_EXPORTER"))
	c.Endpoint = base
	if te != "" {
		c.Endpoint = te
	}
	proto := getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	c.TracesProtocol, c.MetricsProtocol = first(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), proto), first(getenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"), proto)
	for _, p := range []string{c.TracesProtocol, c.MetricsProtocol} {
		switch p {
		case "", ProtocolGRPC, ProtocolHTTP:
		default:
			return Config{}, fmt.Errorf("otlp: OTEL_EXPORTER_OTLP_PROTOCOL %q is not supported (use %s or %s)", p, ProtocolGRPC, ProtocolHTTP)
		}
	}
	if v := getenv("OTEL_EXPORTER_OTLP_TIMEOUT"); v != "" {
		var ms int64
		if _, err := fmt.Sscan(v, &ms); err != nil || ms <= 0 {
			return Config{}, fmt.Errorf("otlp: OTEL_EXPORTER_OTLP_TIMEOUT %q is not a positive number of milliseconds", v)
		}
		c.Timeout = time.Duration(ms) * time.Millisecond
	}
	switch strings.ToLower(getenv(CaptureContentEnv)) {
	case "true", "1", "yes":
		c.CaptureContent = true
	}
	return c, nil
}

func exporterOn(v string) bool {
	for _, s := range strings.Split(v, ",") {
		if strings.TrimSpace(s) == "none" {
			return false
		}
	}
	return true
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Resource is service.name (default "agentctl", or OTEL_SERVICE_NAME),
// service.version, the telemetry.sdk.* of the OpenTelemetry Go SDK that
// exports, and OTEL_RESOURCE_ATTRIBUTES. Nothing about the host or
// process: a session re-exported elsewhere must carry the same resource.
func (c *Config) Resource() *sdkresource.Resource {
	if c.resource != nil {
		return c.resource
	}
	attrs := []attribute.KeyValue{semconv.ServiceName("agentctl"), semconv.ServiceVersion(buildinfo.Version),
		semconv.TelemetrySDKName("opentelemetry"), semconv.TelemetrySDKLanguageGo, semconv.TelemetrySDKVersion(sdk.Version())}
	if c.getenv != nil {
		for _, kv := range strings.Split(c.getenv("OTEL_RESOURCE_ATTRIBUTES"), ",") {
			k, v, ok := strings.Cut(kv, "=")
			if k = strings.TrimSpace(k); !ok || k == "" {
				continue
			}
			if u, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
				v = u
			}
			attrs = append(attrs, attribute.String(k, v))
		}
		if n := c.getenv("OTEL_SERVICE_NAME"); n != "" {
			attrs = append(attrs, semconv.ServiceName(n))
		}
	}
	// NewSchemaless keeps the last value of a repeated key.
	c.resource = sdkresource.NewSchemaless(attrs...)
	return c.resource
}

func (c Config) traceExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	// No retries: the log is the source of truth and export otlp re-sends
	// idempotently, so a collector that is down costs nothing but a line.
	switch c.TracesProtocol {
	case ProtocolGRPC:
		return otlptracegrpc.New(ctx, otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}),
			otlptracegrpc.WithTimeout(c.Timeout))
	default:
		return otlptracehttp.New(ctx, otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
			otlptracehttp.WithTimeout(c.Timeout))
	}
}

func (c Config) metricExporter(ctx context.Context) (sdkmetric.Exporter, error) {
	switch c.MetricsProtocol {
	case ProtocolGRPC:
		return otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: false}),
			otlpmetricgrpc.WithTimeout(c.Timeout))
	default:
		return otlpmetrichttp.New(ctx, otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}),
			otlpmetrichttp.WithTimeout(c.Timeout))
	}
}
