package cli

import (
	"context"
	"errors"
	"fmt"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"

	"github.com/agentctl/agentctl/internal/collect"
	"github.com/agentctl/agentctl/internal/otelsession"
)

// openCollectSink opens what collect writes into: the OTLP mapping over
// the home's store, and its Close, which writes what is pending and
// seals the sessions. An Ingester left by a kill -9 is recovered here
// (its spool of acknowledged spans is written into sessions first).
func openCollectSink(f *Factory, opts *collectOptions) (collect.Sink, func() error, error) {
	st := f.Store()
	unlock, err := otelsession.LockCollector(st)
	if err != nil {
		return nil, nil, fmt.Errorf("collect: %w", err)
	}
	before, err := st.IDs()
	if err != nil {
		unlock()
		return nil, nil, fmt.Errorf("collect: list the home's sessions: %w", err)
	}
	in, err := otelsession.NewIngester(st, otelsession.Options{MaxSpansPerSession: opts.MaxSpansPerSession, MaxAttrBytes: opts.MaxAttributeBytes, SpanWait: opts.SpanWait, Source: "collect",
		Logf: func(format string, args ...any) { fmt.Fprintf(f.Err, format+"\n", args...) }})
	if err != nil {
		unlock()
		return nil, nil, fmt.Errorf("collect: open the OTLP mapping over %s: %w", f.Home, err)
	}
	s := &ingesterSink{in: in, before: map[string]bool{}}
	for _, id := range before {
		s.before[id] = true
	}
	return s, func() error { defer unlock(); return in.Close() }, nil
}

// ingesterSink is the Ingester as collect's Sink: its ErrBusy becomes
// collect's back-pressure, and it counts the sessions this run created.
type ingesterSink struct {
	in     *otelsession.Ingester
	before map[string]bool
}

var (
	_ collect.Sink           = (*ingesterSink)(nil)
	_ collect.SessionCounter = (*ingesterSink)(nil)
	_ collect.WireSink       = (*ingesterSink)(nil)
)

func (s *ingesterSink) Traces(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (otelsession.Result, error) {
	res, err := s.in.Traces(ctx, req)
	return res, busy(err)
}

func (s *ingesterSink) Logs(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (otelsession.Result, error) {
	res, err := s.in.Logs(ctx, req)
	return res, busy(err)
}

func (s *ingesterSink) TracesWire(ctx context.Context, body []byte) (otelsession.Result, error) {
	res, err := s.in.TracesWire(ctx, body)
	return res, busy(err)
}

func (s *ingesterSink) LogsWire(ctx context.Context, req *collogspb.ExportLogsServiceRequest, body []byte) (otelsession.Result, error) {
	res, err := s.in.LogsWire(ctx, req, body)
	return res, busy(err)
}

func busy(err error) error {
	if errors.Is(err, otelsession.ErrBusy) {
		return fmt.Errorf("%w: %w", collect.ErrBusy, err)
	}
	return err
}

// Sessions counts the sessions this collect wrote that were not there
// when it started (sessions it extended are not counted again, nor ones
// other commands made meanwhile).
func (s *ingesterSink) Sessions() int {
	n := 0
	for _, id := range s.in.Sessions() {
		if !s.before[id] {
			n++
		}
	}
	return n
}
