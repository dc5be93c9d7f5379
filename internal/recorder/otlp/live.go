package otlp

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"

	"github.com/agentctl/agentctl/internal/modelapi"

	"github.com/agentctl/agentctl/internal/session"
)

// Bucket boundaries the conventions give for the two client metrics.
var (
	TokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	DurationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

// Queue limits of the live exporter. A span that finds the queue full is
// dropped, never waited for: the run goes on at its own speed.
const (
	QueueSize    = 4096
	BatchSize    = 512
	FlushTimeout = 2 * time.Second
)

// Live exports a run while it happens: it is a runner observer (Event is
// called after each durable append) that builds spans from the events
// exactly as Spans does from the log, and hands them to a bounded batch
// queue exported in the background. Event never blocks on the network.
//
// Event, Text, Resume and Shutdown may be called from different goroutines;
// calls are serialized.
type Live struct {
	cfg  Config
	mu   sync.Mutex
	b    *builder
	mute bool

	bsp       sdktrace.SpanProcessor
	exp       *countingExporter
	submitted int

	mp       *sdkmetric.MeterProvider
	tokens   genaiconv.ClientTokenUsage
	duration genaiconv.ClientOperationDuration
	done     bool

	// parent, for a Child, is the exporter whose queue and metrics it
	// uses.
	parent *Live
}

// NewLive builds the exporters cfg asks for. It does not connect: an
// unreachable collector shows up as dropped spans in the Report.
func NewLive(ctx context.Context, cfg Config) (*Live, error) {
	if !cfg.Enabled() {
		return nil, ErrNotConfigured
	}
	// The SDK reports export failures to the global handler, which logs
	// to stderr by default; the Report says it once instead.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	var (
		spans  sdktrace.SpanExporter
		reader sdkmetric.Reader
	)
	if cfg.Traces {
		exp, err := cfg.traceExporter(ctx)
		if err != nil {
			return nil, fmt.Errorf("otlp: trace exporter: %w", err)
		}
		spans = exp
	}
	if cfg.Metrics {
		exp, err := cfg.metricExporter(ctx)
		if err != nil {
			return nil, fmt.Errorf("otlp: metric exporter: %w", err)
		}
		reader = sdkmetric.NewPeriodicReader(exp, sdkmetric.WithTimeout(cfg.Timeout))
	}
	return newLive(cfg, spans, reader)
}

// newLive wires a span exporter and a metric reader, either of which may
// be nil.
func newLive(cfg Config, spans sdktrace.SpanExporter, reader sdkmetric.Reader) (*Live, error) {
	l := &Live{cfg: cfg}
	if spans != nil {
		l.exp = &countingExporter{SpanExporter: spans}
		l.bsp = sdktrace.NewBatchSpanProcessor(l.exp, sdktrace.WithMaxQueueSize(QueueSize),
			sdktrace.WithMaxExportBatchSize(BatchSize), sdktrace.WithExportTimeout(cfg.Timeout))
	}
	if reader != nil {
		if err := l.initMetrics(reader); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// initMetrics creates the two client metrics with the conventions' units
// and bucket boundaries on a meter provider reading through r.
func (l *Live) initMetrics(r sdkmetric.Reader) error {
	l.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r), sdkmetric.WithResource(l.cfg.Resource()))
	m := l.mp.Meter(ScopeName)
	var err error
	if l.tokens, err = genaiconv.NewClientTokenUsage(m, metric.WithExplicitBucketBoundaries(TokenBuckets...)); err != nil {
		return fmt.Errorf("otlp: %s: %w", l.tokens.Name(), err)
	}
	if l.duration, err = genaiconv.NewClientOperationDuration(m, metric.WithExplicitBucketBoundaries(DurationBuckets...)); err != nil {
		return fmt.Errorf("otlp: %s: %w", l.duration.Name(), err)
	}
	return nil
}

func (l *Live) options() Options {
	return Options{Resource: l.cfg.Resource(), CaptureContent: l.cfg.CaptureContent}
}

// Resume prepares the exporter for a resumed session: the events already
// in the log are folded first so that spans opened before (a tool call in
// flight at a crash, an approval wait) close with the ids an export of the
// whole log gives. Spans that ended in an earlier run are not sent again;
// those closed by events written between runs (approve, deny) are.
func (l *Live) Resume(sessionID string, prior []session.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = newBuilder(sessionID, l.options(), l.emit, l.record)
	last := -1
	for i, e := range prior {
		if e.Kind == session.KindSessionFinished {
			last = i
		}
	}
	l.mute = true
	for _, e := range prior[:last+1] {
		l.b.add(e)
	}
	l.mute = false
	for _, e := range prior[last+1:] {
		l.b.add(e)
	}
}

// Event folds one durable event; spans it ends are queued for export.
func (l *Live) Event(e session.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	if l.b == nil {
		if e.Kind != session.KindSessionStarted || e.SessionID == "" {
			return // a resumed session without Resume: no ids to give
		}
		l.b = newBuilder(e.SessionID, l.options(), l.emit, l.record)
	}
	l.b.add(e)
}

// Text is part of the observer interface; streamed text is not exported.
func (l *Live) Text(string) {}

func (l *Live) emit(s tracetest.SpanStub) {
	if p := l.parent; p != nil {
		if !l.mute {
			p.mu.Lock()
			p.emit(s)
			p.mu.Unlock()
		}
		return
	}
	if l.mute || l.bsp == nil {
		return
	}
	l.submitted++
	l.bsp.OnEnd(s.Snapshot())
}

func (l *Live) record(c Chat) {
	if p := l.parent; p != nil {
		if !l.mute {
			p.mu.Lock()
			p.record(c)
			p.mu.Unlock()
		}
		return
	}
	if l.mute || l.mp == nil {
		return
	}
	ctx := context.Background()
	op, prov := genaiconv.OperationNameChat, genaiconv.ProviderNameAttr(modelapi.GenAIProviderName(c.Provider))
	attrs := []attribute.KeyValue{l.tokens.AttrRequestModel(c.RequestModel), l.tokens.AttrResponseModel(c.ResponseModel)}
	if c.ErrorType == "" {
		l.tokens.Record(ctx, c.InputTokens, op, prov, genaiconv.TokenTypeInput, attrs...)
		l.tokens.Record(ctx, c.OutputTokens, op, prov, genaiconv.TokenTypeOutput, attrs...)
	} else {
		attrs = append(attrs, l.duration.AttrErrorType(genaiconv.ErrorTypeAttr(c.ErrorType)))
	}
	l.duration.Record(ctx, c.Duration.Seconds(), op, prov, attrs...)
}

// Report says what reached the collector.
type Report struct {
	SessionID string
	// Spans were queued; Dropped of them never reached the collector
	// (queue full, export failed or timed out, or flush cut short).
	Spans, Dropped int
	// MetricsErr is set when the final metric export failed.
	MetricsErr error
	// Err is the first export error, if any.
	Err      error
	Endpoint string
}

// Warning is the one line to print after the run, or "" when everything
// was delivered.
func (r Report) Warning() string {
	if r.Dropped == 0 && r.MetricsErr == nil {
		return ""
	}
	msg := fmt.Sprintf("otlp: %d of %d spans dropped", r.Dropped, r.Spans)
	switch {
	case r.Dropped == 0:
		msg = "otlp: metrics not delivered"
	case r.MetricsErr != nil:
		msg += ", metrics not delivered"
	}
	if r.Endpoint != "" {
		msg += " (collector " + r.Endpoint + ")"
	}
	if err := r.Err; err != nil || r.MetricsErr != nil {
		if err == nil {
			err = r.MetricsErr
		}
		msg += ": " + oneLine(err.Error())
	}
	if r.SessionID != "" && r.Dropped > 0 {
		msg += "; the log has everything: agentctl export otlp " + r.SessionID
	}
	return msg
}

// Shutdown ends the spans still open, flushes what is queued within
// FlushTimeout (or ctx, whichever ends first) and reports. Events after
// Shutdown are ignored.
func (l *Live) Shutdown(ctx context.Context) Report {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return Report{}
	}
	l.done = true
	rep := Report{Endpoint: l.cfg.Endpoint}
	if l.b != nil {
		rep.SessionID = l.b.sid
		l.b.close()
	}
	ctx, cancel := context.WithTimeout(ctx, FlushTimeout)
	defer cancel()
	var wg sync.WaitGroup
	if l.mp != nil {
		wg.Go(func() {
			if err := l.mp.Shutdown(ctx); err != nil {
				rep.MetricsErr = err
			}
		})
	}
	if l.bsp != nil {
		_ = l.bsp.Shutdown(ctx)
		rep.Spans = l.submitted
		rep.Dropped = l.submitted - int(l.exp.exported.Load())
		rep.Err = l.exp.err()
		if rep.Err == nil && rep.Dropped > 0 && ctx.Err() != nil {
			rep.Err = fmt.Errorf("flush cut after %s", FlushTimeout)
		}
	}
	wg.Wait()
	return rep
}

// countingExporter counts the spans the collector accepted and keeps the
// first error.
type countingExporter struct {
	sdktrace.SpanExporter
	exported atomic.Int64
	mu       sync.Mutex
	first    error
}

func (c *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, spans)
	if err == nil {
		c.exported.Add(int64(len(spans)))
		return nil
	}
	c.mu.Lock()
	if c.first == nil {
		c.first = err
	}
	c.mu.Unlock()
	return err
}

func (c *countingExporter) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first
}

func oneLine(s string) string {
	const max = 200
	for i, r := range s {
		if r == '\n' {
			s = s[:i]
			break
		}
	}
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// Child returns an exporter of another session (a subagent run in the
// same process) that shares l's queue and metrics: its spans are counted
// in l's Report and flushed by l's Shutdown. Its builder is its own; a
// subagent's header puts its spans in the trace of the top session.
func (l *Live) Child() *Live {
	return &Live{cfg: l.cfg, parent: l}
}
