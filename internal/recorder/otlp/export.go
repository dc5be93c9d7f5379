package otlp

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentctl/agentctl/internal/session"
)

var errNoSpans = errors.New("otlp: the log holds no events")

// SessionSpans builds the spans of one session's log with the resource and
// content settings of cfg.
func (c *Config) SessionSpans(sessionID string, evs []session.Event) tracetest.SpanStubs {
	return Spans(sessionID, evs, c.options())
}

// WriteSessionJSON writes the OTLP/JSON trace of one session's events, as
// each hands them over, with the resource and content settings of cfg
// (see the function WriteSessionJSON): a bundle's trace.json.
func (c *Config) WriteSessionJSON(w io.Writer, sessionID string, each func(func(session.Event))) error {
	return WriteSessionJSON(w, sessionID, each, c.options())
}

func (c *Config) options() Options {
	return Options{Resource: c.Resource(), CaptureContent: c.CaptureContent}
}

// Export sends spans to the collector cfg names and waits for it to accept
// them, in batches of BatchSize. It does not retry: exporting again sends
// the same ids, which backends deduplicate. Metrics are not re-exported: they
// are aggregates over the time of the run, and the spans carry the same
// numbers.
func Export(ctx context.Context, cfg Config, spans tracetest.SpanStubs) error {
	if !cfg.Traces {
		return ErrNotConfigured
	}
	if len(spans) == 0 {
		return errNoSpans
	}
	exp, err := cfg.traceExporter(ctx)
	if err != nil {
		return fmt.Errorf("otlp: trace exporter: %w", err)
	}
	for i := 0; i < len(spans); i += BatchSize {
		batch := spans[i:min(i+BatchSize, len(spans))]
		if err := exp.ExportSpans(ctx, batch.Snapshots()); err != nil {
			_ = exp.Shutdown(ctx)
			return fmt.Errorf("otlp: export to %s: %w", cfg.Endpoint, err)
		}
	}
	if err := exp.Shutdown(ctx); err != nil {
		return fmt.Errorf("otlp: export to %s: %w", cfg.Endpoint, err)
	}
	return nil
}
