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

// openCollectSink opens what collect writes into: the OTLP mapping
// (internal/otelsession) over the home's store, and its Close, which
// seals the sessions.
func openCollectSink(f *Factory, opts *collectOptions) (collect.Sink, func() error, error) {
	in, err := otelsession.NewIngester(f.Store(), otelsession.Options{
		MaxSpansPerSession: opts.MaxSpansPerSession,
		MaxAttrBytes:       opts.MaxAttributeBytes,
		Source:             "collect",
	})
	if err != nil {
		return nil, nil, err
	}
	return ingestSink{in}, in.Close, nil
}

// ingestSink is the Ingester as collect's Sink: the mapping's
// back-pressure (otelsession.ErrBusy) is collect's (collect.ErrBusy),
// which the receiver answers 429 / RESOURCE_EXHAUSTED.
type ingestSink struct{ in *otelsession.Ingester }

var _ collect.Sink = ingestSink{}

func (s ingestSink) Traces(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (otelsession.Result, error) {
	res, err := s.in.Traces(ctx, req)
	return res, busy(err)
}

func (s ingestSink) Logs(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (otelsession.Result, error) {
	res, err := s.in.Logs(ctx, req)
	return res, busy(err)
}

func busy(err error) error {
	if errors.Is(err, otelsession.ErrBusy) {
		return fmt.Errorf("%w: %w", collect.ErrBusy, err)
	}
	return err
}
