package collect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/gzip" // exporters' OTEL_EXPORTER_OTLP_COMPRESSION=gzip
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/loopback"
	"github.com/agentctl/agentctl/internal/otelsession"
)

// GRPC returns a gRPC server with OTLP's TraceService and LogsService
// registered, answering as the HTTP handler does. gRPC itself bounds a
// message at MaxDecodedBytes, after decompression too (a larger one is
// RESOURCE_EXHAUSTED without RetryInfo: not retried). The caller Serves
// it and stops it (GracefulStop drains what is in flight).
func (s *Server) GRPC(opts ...grpc.ServerOption) *grpc.Server {
	opts = append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(s.cfg.MaxDecodedBytes)),
		grpc.ForceServerCodecV2(grpcCodec{s: s, base: encoding.GetCodecV2(grpcproto.Name)}),
		grpc.UnaryInterceptor(s.grpcUnary),
		// The token is checked when a call's headers come, before its
		// message is read, counted or decoded: a client without it costs
		// the collector no memory (grpcUnary checks again, for a server
		// built with other options).
		grpc.InTapHandle(s.grpcTap),
		// A connection that never finishes its handshake, or carries no
		// call for IdleTimeout, is closed; a client may not ping more
		// than every 10 s to keep one open.
		grpc.ConnectionTimeout(min(s.cfg.ReadTimeout, 10*time.Second)),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: s.cfg.IdleTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.MaxConcurrentStreams(100),
	}, opts...)
	g := grpc.NewServer(opts...)
	coltracepb.RegisterTraceServiceServer(g, grpcTraces{s: s})
	collogspb.RegisterLogsServiceServer(g, grpcLogs{s: s})
	return g
}

type grpcTraces struct {
	coltracepb.UnimplementedTraceServiceServer
	s *Server
}

type grpcLogs struct {
	collogspb.UnimplementedLogsServiceServer
	s *Server
}

var (
	_ coltracepb.TraceServiceServer = grpcTraces{}
	_ collogspb.LogsServiceServer   = grpcLogs{}
)

func (t grpcTraces) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	res, err := t.s.grpcExport(ctx, traces, req, func() (otelsession.Result, error) { return t.s.cfg.Sink.Traces(ctx, req) })
	if err != nil {
		return nil, err
	}
	return traceResponse(res), nil
}

func (l grpcLogs) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	res, err := l.s.grpcExport(ctx, logs, req, func() (otelsession.Result, error) { return l.s.cfg.Sink.Logs(ctx, req) })
	if err != nil {
		return nil, err
	}
	return logsResponse(res), nil
}

// grpcExport is one gRPC export: the in-flight budget, the Sink, the
// counts and the forward.
func (s *Server) grpcExport(ctx context.Context, g signal, req proto.Message, sink func() (otelsession.Result, error)) (otelsession.Result, error) {
	// What decoding it holds was reserved before it was decoded
	// (grpcCodec), and is released when the call ends (grpcUnary).
	s.stats.requests.Add(1)
	res, err := sink()
	if errors.Is(err, ErrBusy) {
		return otelsession.Result{}, s.grpcThrottle("too many spans waiting to be written", retryAfter(err))
	}
	if err != nil {
		s.stats.sinkErrors.Add(1)
		if ctx.Err() == nil && !errors.Is(err, otelsession.ErrWritesFailing) {
			s.cfg.Logf("agentctl collect: %s export not stored (the exporter will retry): %v", g, err)
		}
		return otelsession.Result{}, status.Errorf(codes.Unavailable, "agentctl collect: %s not stored, retry: %v", g, err)
	}
	s.account(g, res)
	if s.cfg.Forward != nil {
		if b, err := proto.Marshal(req); err == nil {
			s.cfg.Forward.Enqueue(g, ctProtobuf, "", b)
		}
	}
	return res, nil
}

// grpcThrottle is back-pressure over gRPC: RESOURCE_EXHAUSTED with a
// RetryInfo, which the OTLP specification makes retryable.
func (s *Server) grpcThrottle(why string, retry time.Duration) error {
	s.stats.throttled.Add(1)
	if retry <= 0 {
		retry = s.cfg.RetryAfter
	}
	st, _ := status.New(codes.ResourceExhausted, "agentctl collect: busy ("+why+"): retry").
		WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(retry)})
	return st.Err()
}

// grpcDecode is what grpcCodec did with one request message: the bytes
// of the budget its decoding holds, or why it was not decoded.
type grpcDecode struct {
	cost int64
	err  error
}

// grpcCodec is gRPC's protobuf codec with OTLP's exports bounded: it
// counts what decoding an export will allocate on its bytes
// (otelsession.DecodeCost) and reserves that from the in-flight budget
// before decoding, as the HTTP side does. An export it refuses is left
// undecoded, its status kept for grpcUnary to answer (an error returned
// from a codec reaches the client as INTERNAL).
type grpcCodec struct {
	s    *Server
	base encoding.CodecV2
}

func (c grpcCodec) Name() string { return c.base.Name() }

func (c grpcCodec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

func (c grpcCodec) Unmarshal(data mem.BufferSlice, v any) error {
	var g signal
	switch v.(type) {
	case *coltracepb.ExportTraceServiceRequest:
		g = traces
	case *collogspb.ExportLogsServiceRequest:
		g = logs
	default:
		return c.base.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	b := buf.ReadOnlyData()
	s := c.s
	cost, err := otelsession.DecodeCost(g.String(), b)
	switch {
	case err != nil:
		s.stats.invalid.Add(1)
		s.decodes.Store(v, grpcDecode{err: status.Errorf(codes.InvalidArgument, "agentctl collect: %s export: %s", g, clip.Bytes(err.Error(), 500))})
		return nil
	case cost > s.cfg.MaxInflightBytes:
		s.stats.invalid.Add(1)
		s.decodes.Store(v, grpcDecode{err: status.Errorf(codes.ResourceExhausted, "agentctl collect: the %s export would take %d bytes decoded, over the %d-byte limit: export smaller batches", g, cost, s.cfg.MaxInflightBytes)})
		return nil
	case !s.budget.tryAcquire(cost):
		s.decodes.Store(v, grpcDecode{err: s.grpcThrottle(fmt.Sprintf("%d MiB of exports in flight", s.cfg.MaxInflightBytes>>20), 0)})
		return nil
	}
	if err := proto.Unmarshal(b, v.(proto.Message)); err != nil {
		s.budget.release(cost)
		return err
	}
	s.decodes.Store(v, grpcDecode{cost: cost})
	return nil
}

// grpcUnary ends what grpcCodec began for the call's message (its
// refusal answered, its reservation released when the call ends) and
// checks the token.
func (s *Server) grpcUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	var d grpcDecode
	if x, ok := s.decodes.LoadAndDelete(req); ok {
		d = x.(grpcDecode)
	}
	defer s.budget.release(d.cost)
	md, _ := metadata.FromIncomingContext(ctx)
	if err := s.grpcAuth(md); err != nil {
		return nil, err
	}
	if d.err != nil {
		return nil, d.err
	}
	return handler(ctx, req)
}

// grpcTap refuses a call without the token before its stream is made.
func (s *Server) grpcTap(ctx context.Context, info *tap.Info) (context.Context, error) {
	return ctx, s.grpcAuth(info.Header)
}

// grpcAuth checks the token on every call: metadata "authorization:
// Bearer TOKEN" (OTEL_EXPORTER_OTLP_HEADERS) or x-agentctl-token.
func (s *Server) grpcAuth(md metadata.MD) error {
	if s.cfg.Token != "" {
		got := first(md.Get("x-agentctl-token"))
		if a := first(md.Get("authorization")); got == "" && len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			got = strings.TrimSpace(a[7:])
		}
		if !loopback.TokenOK(got, s.cfg.Token) {
			s.stats.invalid.Add(1)
			return status.Error(codes.Unauthenticated, "agentctl collect: this collector needs its token: set OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20TOKEN")
		}
	}
	return nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
