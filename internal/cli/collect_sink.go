package cli

import (
	"context"
	"errors"
	"fmt"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"

	"github.com/agentctl/agentctl/internal/collect"
	"github.com/agentctl/agentctl/internal/otelsession"
	"github.com/agentctl/agentctl/internal/recorder"
)

// openCollectSink opens what collect writes into: the OTLP mapping over
// the home's store, and its Close, which writes what is pending and
// seals the sessions. An Ingester left by a kill -9 is recovered here
// (its spool of acknowledged spans is written into sessions first).
func openCollectSink(f *Factory, opts *collectOptions) (collect.Sink, func() error, error) {
	st := f.Store()
	before, err := st.IDs()
	if err != nil {
		return nil, nil, fmt.Errorf("collect: list the home's sessions: %w", err)
	}
	in, err := otelsession.NewIngester(st, otelsession.Options{MaxSpansPerSession: opts.MaxSpansPerSession, MaxAttrBytes: opts.MaxAttributeBytes, Source: "collect",
		Logf: func(format string, args ...any) { fmt.Fprintf(f.Err, format+"\n", args...) }})
	if err != nil {
		return nil, nil, fmt.Errorf("collect: open the OTLP mapping over %s: %w", f.Home, err)
	}
	s := &ingesterSink{in: in, st: st, before: map[string]bool{}}
	for _, id := range before {
		s.before[id] = true
	}
	return s, in.Close, nil
}

// ingesterSink is the Ingester as collect's Sink: its ErrBusy becomes
// collect's back-pressure, and it counts the sessions this run created.
type ingesterSink struct {
	in     *otelsession.Ingester
	st     recorder.Store
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

// Sessions counts the sessions in the home that were not there when
// collect started (sessions it extended are not counted again).
func (s *ingesterSink) Sessions() int {
	ids, err := s.st.IDs()
	if err != nil {
		return 0
	}
	n := 0
	for _, id := range ids {
		if !s.before[id] {
			n++
		}
	}
	return n
}
