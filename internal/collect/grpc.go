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
	_ "google.golang.org/grpc/encoding/gzip" // exporters' OTEL_EXPORTER_OTLP_COMPRESSION=gzip
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

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
		grpc.UnaryInterceptor(s.grpcAuth),
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
	// gRPC has read and decoded the message already; what it holds is
	// reserved now, so a burst beyond the budget is pushed back as the
	// HTTP side pushes it.
	size := int64(proto.Size(req))
	cost := (decodedFactor + 1) * size
	if !s.budget.tryAcquire(cost) {
		return otelsession.Result{}, s.grpcThrottle(fmt.Sprintf("%d MiB of exports in flight", s.cfg.MaxInflightBytes>>20), 0)
	}
	defer s.budget.release(cost)
	s.stats.requests.Add(1)
	res, err := sink()
	if errors.Is(err, ErrBusy) {
		return otelsession.Result{}, s.grpcThrottle("too many spans waiting to be written", retryAfter(err))
	}
	if err != nil {
		s.stats.sinkErrors.Add(1)
		if ctx.Err() == nil {
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

// grpcAuth checks the token on every call: metadata "authorization:
// Bearer TOKEN" (OTEL_EXPORTER_OTLP_HEADERS) or x-agentctl-token.
func (s *Server) grpcAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if s.cfg.Token != "" {
		md, _ := metadata.FromIncomingContext(ctx)
		got := first(md.Get("x-agentctl-token"))
		if a := first(md.Get("authorization")); got == "" && len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			got = strings.TrimSpace(a[7:])
		}
		if !loopback.TokenOK(got, s.cfg.Token) {
			s.stats.invalid.Add(1)
			return nil, status.Error(codes.Unauthenticated, "agentctl collect: this collector needs its token: set OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20TOKEN")
		}
	}
	return handler(ctx, req)
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
