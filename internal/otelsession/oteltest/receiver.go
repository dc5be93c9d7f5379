package oteltest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // the gzip compressor gRPC exporters may use
	"google.golang.org/protobuf/proto"
)

// MaxBody bounds one request's body, before and after gzip: the capture
// receiver is a test helper, but what it reads is still a network peer's.
const MaxBody = 16 << 20

// Protocol is an OTLP exporter protocol, spelled as
// OTEL_EXPORTER_OTLP_PROTOCOL spells it.
type Protocol string

// The three protocols every OTLP SDK exporter speaks.
const (
	HTTPProtobuf Protocol = "http/protobuf"
	HTTPJSON     Protocol = "http/json"
	GRPC         Protocol = "grpc"
)

// Protocols are all three, in the order tests run them.
var Protocols = []Protocol{HTTPProtobuf, HTTPJSON, GRPC}

// Dir is the protocol's folder name in a capture ("http-protobuf").
func (p Protocol) Dir() string { return strings.NewReplacer("/", "-").Replace(string(p)) }

// Signal is what an export carries.
type Signal string

// The signals the receiver accepts.
const (
	Traces Signal = "traces"
	Logs   Signal = "logs"
)

// Request is one export as the receiver got it.
type Request struct {
	Signal Signal
	// Transport is "http" or "grpc".
	Transport string
	// ContentType and ContentEncoding are the HTTP headers ("application/
	// x-protobuf", "application/json"; "gzip" or ""); for gRPC,
	// "application/grpc" and "" (the transport has already inflated it).
	ContentType     string
	ContentEncoding string
	// Body is the request body as sent (still gzipped if it was) for HTTP,
	// the message's protobuf encoding for gRPC.
	Body []byte
	// Received is when the request arrived.
	Received time.Time
}

// Decoded is Body with any gzip removed.
func (r Request) Decoded() ([]byte, error) {
	if r.ContentEncoding != "gzip" || r.Transport == "grpc" {
		return r.Body, nil
	}
	return gunzip(r.Body)
}

// IsJSON reports whether the body is OTLP JSON (else it is protobuf).
func (r Request) IsJSON() bool { return strings.HasPrefix(r.ContentType, "application/json") }

// Receiver is a capturing OTLP receiver on loopback.
type Receiver struct {
	httpLn, grpcLn net.Listener
	httpSrv        *http.Server
	grpcSrv        *grpc.Server

	mu   sync.Mutex
	reqs []Request
}

// StartReceiver starts a receiver on free loopback ports, HTTP and gRPC;
// t's cleanup stops it.
func StartReceiver(t testing.TB) *Receiver {
	t.Helper()
	r, err := NewReceiver()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// NewReceiver starts a receiver on free loopback ports; Close stops it.
func NewReceiver() (*Receiver, error) {
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("oteltest: listen http: %w", err)
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		hl.Close()
		return nil, fmt.Errorf("oteltest: listen grpc: %w", err)
	}
	r := &Receiver{httpLn: hl, grpcLn: gl}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.serveHTTP(Traces))
	mux.HandleFunc("POST /v1/logs", r.serveHTTP(Logs))
	r.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	r.grpcSrv = grpc.NewServer(grpc.MaxRecvMsgSize(MaxBody))
	coltrace.RegisterTraceServiceServer(r.grpcSrv, traceService{r: r})
	collogs.RegisterLogsServiceServer(r.grpcSrv, logsService{r: r})
	go r.httpSrv.Serve(hl)
	go r.grpcSrv.Serve(gl)
	return r, nil
}

// Endpoint is what OTEL_EXPORTER_OTLP_ENDPOINT names for p: the HTTP base
// URL (the SDK appends /v1/traces, /v1/logs) or the gRPC address as an
// http:// URL (an insecure channel).
func (r *Receiver) Endpoint(p Protocol) string {
	if p == GRPC {
		return "http://" + r.grpcLn.Addr().String()
	}
	return "http://" + r.httpLn.Addr().String()
}

// Requests are the exports received so far, in arrival order.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

// Reset forgets the requests received so far.
func (r *Receiver) Reset() {
	r.mu.Lock()
	r.reqs = nil
	r.mu.Unlock()
}

// Close stops both servers.
func (r *Receiver) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.httpSrv.Shutdown(ctx)
	r.grpcSrv.Stop()
}

func (r *Receiver) add(q Request) {
	q.Received = time.Now()
	r.mu.Lock()
	r.reqs = append(r.reqs, q)
	r.mu.Unlock()
}

func (r *Receiver) serveHTTP(sig Signal) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		ct := req.Header.Get("Content-Type")
		enc := req.Header.Get("Content-Encoding")
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxBody))
		if err != nil {
			http.Error(w, fmt.Sprintf("read body: %v", err), http.StatusRequestEntityTooLarge)
			return
		}
		if enc == "gzip" {
			if _, err := gunzip(body); err != nil {
				http.Error(w, fmt.Sprintf("gzip body: %v", err), http.StatusBadRequest)
				return
			}
		} else if enc != "" {
			http.Error(w, fmt.Sprintf("content-encoding %q: want gzip or none", enc), http.StatusUnsupportedMediaType)
			return
		}
		r.add(Request{Signal: sig, Transport: "http", ContentType: ct, ContentEncoding: enc, Body: body})
		if strings.HasPrefix(ct, "application/json") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "{}")
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		var resp proto.Message = &coltrace.ExportTraceServiceResponse{}
		if sig == Logs {
			resp = &collogs.ExportLogsServiceResponse{}
		}
		b, _ := proto.Marshal(resp)
		w.Write(b)
	}
}

// gunzip inflates b, refusing more than MaxBody bytes out.
func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, MaxBody+1))
	if err != nil {
		return nil, err
	}
	if len(out) > MaxBody {
		return nil, errors.New("oteltest: gzip body inflates past MaxBody")
	}
	return out, nil
}

type traceService struct {
	coltrace.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(ctx context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	s.r.add(Request{Signal: Traces, Transport: "grpc", ContentType: "application/grpc", Body: b})
	return &coltrace.ExportTraceServiceResponse{}, nil
}

type logsService struct {
	collogs.UnimplementedLogsServiceServer
	r *Receiver
}

func (s logsService) Export(ctx context.Context, req *collogs.ExportLogsServiceRequest) (*collogs.ExportLogsServiceResponse, error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	s.r.add(Request{Signal: Logs, Transport: "grpc", ContentType: "application/grpc", Body: b})
	return &collogs.ExportLogsServiceResponse{}, nil
}
