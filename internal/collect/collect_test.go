package collect

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/otelsession"
)

// stubs are n spans of one trace, ids fixed by seed so a test can name
// them and a second export of the same stubs is a retry.
func stubs(seed byte, n int) tracetest.SpanStubs {
	var tid trace.TraceID
	for i := range tid {
		tid[i] = seed
	}
	start := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	out := make(tracetest.SpanStubs, n)
	for i := range n {
		var sid trace.SpanID
		sid[0], sid[6], sid[7] = seed, byte(i>>8), byte(i)
		out[i] = tracetest.SpanStub{
			Name:        "chat gpt-4o",
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}),
			StartTime:   start.Add(time.Duration(i) * time.Millisecond), EndTime: start.Add(time.Duration(i+1) * time.Millisecond),
			Attributes:           []attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat"), attribute.Int("gen_ai.usage.input_tokens", 12)},
			Resource:             resource.NewSchemaless(attribute.String("service.name", "collect-test")),
			InstrumentationScope: instrumentation.Scope{Name: "collect-test"},
		}
	}
	return out
}

func key(s tracetest.SpanStub) string {
	return s.SpanContext.TraceID().String() + "/" + s.SpanContext.SpanID().String()
}

// start serves srv over HTTP and gRPC on loopback until the test ends.
func start(t *testing.T, srv *Server) (httpAddr, grpcAddr string) {
	t.Helper()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := srv.GRPC()
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	return strings.TrimPrefix(hs.URL, "http://"), ln.Addr().String()
}

func newServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

var fastRetry = struct {
	http otlptracehttp.RetryConfig
	grpc otlptracegrpc.RetryConfig
}{
	otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 10 * time.Millisecond, MaxInterval: 50 * time.Millisecond, MaxElapsedTime: 10 * time.Second},
	otlptracegrpc.RetryConfig{Enabled: true, InitialInterval: 10 * time.Millisecond, MaxInterval: 50 * time.Millisecond, MaxElapsedTime: 10 * time.Second},
}

// exporters are the Go OTel SDK's own OTLP exporters, every transport
// and encoding they have, pointed at addr.
func exporters(t *testing.T, httpAddr, grpcAddr string, headers map[string]string) map[string]sdktrace.SpanExporter {
	t.Helper()
	ctx := context.Background()
	mk := map[string]func() (sdktrace.SpanExporter, error){
		"http/protobuf": func() (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(httpAddr), otlptracehttp.WithInsecure(), otlptracehttp.WithHeaders(headers), otlptracehttp.WithRetry(fastRetry.http))
		},
		"http/protobuf+gzip": func() (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(httpAddr), otlptracehttp.WithInsecure(), otlptracehttp.WithHeaders(headers), otlptracehttp.WithRetry(fastRetry.http),
				otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		},
		"http/json": func() (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(httpAddr), otlptracehttp.WithInsecure(), otlptracehttp.WithHeaders(headers), otlptracehttp.WithRetry(fastRetry.http),
				otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
		},
		"grpc": func() (sdktrace.SpanExporter, error) {
			return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(grpcAddr), otlptracegrpc.WithInsecure(), otlptracegrpc.WithHeaders(headers), otlptracegrpc.WithRetry(fastRetry.grpc))
		},
		"grpc+gzip": func() (sdktrace.SpanExporter, error) {
			return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(grpcAddr), otlptracegrpc.WithInsecure(), otlptracegrpc.WithHeaders(headers), otlptracegrpc.WithRetry(fastRetry.grpc),
				otlptracegrpc.WithCompressor("gzip"))
		},
	}
	out := map[string]sdktrace.SpanExporter{}
	for name, f := range mk {
		exp, err := f()
		if err != nil {
			t.Fatalf("%s exporter: %v", name, err)
		}
		t.Cleanup(func() { exp.Shutdown(context.Background()) })
		out[name] = exp
	}
	return out
}

func TestSDKExporters(t *testing.T) {
	mem := &Memory{}
	httpAddr, grpcAddr := start(t, newServer(t, Config{Sink: mem}))
	seed := byte(1)
	for name, exp := range exporters(t, httpAddr, grpcAddr, nil) {
		t.Run(name, func(t *testing.T) {
			ss := stubs(seed, 50)
			seed++
			if err := exp.ExportSpans(context.Background(), ss.Snapshots()); err != nil {
				t.Fatalf("export: %v", err)
			}
			// The same spans again (an exporter's retry) and out of
			// order: each is still there once per delivery, in the sink
			// that dedupes them.
			rev := append(tracetest.SpanStubs(nil), ss...)
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			if err := exp.ExportSpans(context.Background(), rev.Snapshots()); err != nil {
				t.Fatalf("second export: %v", err)
			}
			for _, s := range ss {
				if got := mem.Deliveries(key(s)); got != 2 {
					t.Fatalf("span %s delivered %d times, want 2 (ids must survive the %s encoding)", key(s), got, name)
				}
			}
		})
	}
	if got, want := len(mem.Spans()), 50*5; got != want {
		t.Errorf("distinct spans = %d, want %d", got, want)
	}
}

// post sends body to the HTTP server and returns the response, its body
// read whole.
func post(t *testing.T, url, ct, enc string, body []byte, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestSpecJSONExamples(t *testing.T) {
	mem := &Memory{}
	httpAddr, _ := start(t, newServer(t, Config{Sink: mem}))
	for _, tc := range []struct {
		file, path string
	}{{"otlp-proto-example-trace.json", "/v1/traces"}, {"otlp-proto-example-logs.json", "/v1/logs"}} {
		body, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		resp, out := post(t, "http://"+httpAddr+tc.path, "application/json", "", body, nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %s %s: %s", tc.file, resp.Status, resp.Header.Get("Content-Type"), out)
		}
		if strings.TrimSpace(string(out)) != "{}" {
			t.Errorf("%s: response %s, want {} (full success)", tc.file, out)
		}
	}
	if got := mem.Spans(); len(got) != 1 || got[0] != "5b8efff798038103d269b633813fc60c/eee19b7ec3c1b174" {
		t.Errorf("spans = %v, want the example's one span with its hex ids", got)
	}
	if mem.LogRecords() != 1 {
		t.Errorf("log records = %d, want 1", mem.LogRecords())
	}
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// exportBody is a real protobuf export of the stubs, as the SDK encodes
// it: the request an exporter would send.
func exportBody(t *testing.T, ss tracetest.SpanStubs) []byte {
	t.Helper()
	var got []byte
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer hs.Close()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(hs.URL+"/v1/traces"), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{}))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background())
	if err := exp.ExportSpans(context.Background(), ss.Snapshots()); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestHTTPRefusals(t *testing.T) {
	good := exportBody(t, stubs(7, 3))
	bomb := gz(make([]byte, 8<<20)) // 8 MiB of zeros in ~8 KiB
	big := make([]byte, 70<<10)
	for _, tc := range []struct {
		name     string
		path     string
		token    string
		ct, enc  string
		body     []byte
		hdr      map[string]string
		code     int
		inMsg    string
		grpcCode codes.Code
	}{
		{"not protobuf", "/v1/traces", "", ctProtobuf, "", []byte("\xff\xff\xff\xff"), nil, 400, "not an OTLP protobuf request", codes.InvalidArgument},
		{"not JSON", "/v1/traces", "", ctJSON, "", []byte(`{"resourceSpans": [`), nil, 400, "not an OTLP JSON request", codes.InvalidArgument},
		{"JSON not OTLP", "/v1/traces", "", ctJSON, "", []byte(`{"resourceSpans": 3}`), nil, 400, "not an OTLP JSON request", codes.InvalidArgument},
		{"JSON id not hex", "/v1/traces", "", ctJSON, "", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"0102030405060708"}]}]}]}`), nil, 400, `traceId "zz" is not hex`, codes.InvalidArgument},
		{"gzip not gzip", "/v1/traces", "", ctProtobuf, "gzip", good, nil, 400, "gzip", codes.InvalidArgument},
		{"text/plain", "/v1/traces", "", "text/plain", "", good, nil, 415, "want application/x-protobuf or application/json", codes.Unimplemented},
		{"brotli", "/v1/traces", "", ctProtobuf, "br", good, nil, 415, `Content-Encoding "br"`, codes.Unimplemented},
		{"oversized", "/v1/traces", "", ctProtobuf, "", big, nil, 413, "over the 65536-byte limit", codes.ResourceExhausted},
		{"gzip bomb", "/v1/traces", "", ctProtobuf, "gzip", bomb, nil, 413, "decompresses to", codes.ResourceExhausted},
		{"metrics", "/v1/metrics", "", ctProtobuf, "", good, nil, 404, "not metrics", codes.Unimplemented},
		{"elsewhere", "/api/traces", "", ctProtobuf, "", good, nil, 404, "/v1/traces and /v1/logs", codes.Unimplemented},
		{"web page", "/v1/traces", "", ctProtobuf, "", good, map[string]string{"Origin": "https://evil.example"}, 403, "a web page sent it", codes.PermissionDenied},
		{"no token", "/v1/traces", "s3cret", ctProtobuf, "", good, nil, 401, "needs its token", codes.Unauthenticated},
		{"wrong token", "/v1/traces", "s3cret", ctProtobuf, "", good, map[string]string{"Authorization": "Bearer s3cre"}, 401, "needs its token", codes.Unauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := &Memory{}
			srv := newServer(t, Config{Sink: mem, Token: tc.token, MaxRequestBytes: 64 << 10, MaxDecodedBytes: 1 << 20})
			httpAddr, _ := start(t, srv)
			resp, out := post(t, "http://"+httpAddr+tc.path, tc.ct, tc.enc, tc.body, tc.hdr)
			if resp.StatusCode != tc.code {
				t.Fatalf("status = %s, want %d: %s", resp.Status, tc.code, out)
			}
			st := &statuspb.Status{}
			if tc.ct == ctJSON {
				if err := protojson.Unmarshal(out, st); err != nil {
					t.Fatalf("error body %q is not a JSON google.rpc.Status: %v", out, err)
				}
			} else if err := proto.Unmarshal(out, st); err != nil {
				t.Fatalf("error body %q is not a google.rpc.Status: %v", out, err)
			}
			if !strings.Contains(st.Message, tc.inMsg) || codes.Code(st.Code) != tc.grpcCode {
				t.Errorf("status = %v %q, want %v and a message with %q", codes.Code(st.Code), st.Message, tc.grpcCode, tc.inMsg)
			}
			if n := len(mem.Spans()); n != 0 {
				t.Errorf("%d spans reached the sink, want none", n)
			}
		})
	}
}

func TestTokenAccepted(t *testing.T) {
	mem := &Memory{}
	httpAddr, grpcAddr := start(t, newServer(t, Config{Sink: mem, Token: "s3cret"}))
	seed := byte(20)
	for name, exp := range exporters(t, httpAddr, grpcAddr, map[string]string{"Authorization": "Bearer s3cret"}) {
		if err := exp.ExportSpans(context.Background(), stubs(seed, 2).Snapshots()); err != nil {
			t.Errorf("%s with the token: %v", name, err)
		}
		seed++
	}
	// gRPC without it.
	exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(grpcAddr), otlptracegrpc.WithInsecure(), otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{}))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background())
	err = exp.ExportSpans(context.Background(), stubs(99, 2).Snapshots())
	if status.Code(errors.Unwrap(err)) != codes.Unauthenticated && !strings.Contains(fmt.Sprint(err), "Unauthenticated") {
		t.Errorf("gRPC export without the token: %v, want Unauthenticated", err)
	}
	if got := len(mem.Spans()); got != 2*5 {
		t.Errorf("spans = %d, want %d", got, 2*5)
	}
}

// rejecting accepts every span but those whose index is odd.
type rejecting struct{ Memory }

func (r *rejecting) Traces(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (otelsession.Result, error) {
	var res otelsession.Result
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				if sp.SpanId[7]%2 == 1 {
					res.Rejected = append(res.Rejected, otelsession.Rejection{TraceID: hex.EncodeToString(sp.TraceId), SpanID: hex.EncodeToString(sp.SpanId),
						Reason: fmt.Sprintf("attribute gen_ai.input.messages is %d MiB, over the 1 MiB limit", sp.SpanId[7])})
				} else {
					res.Accepted++
				}
			}
		}
	}
	return res, nil
}

func TestPartialSuccess(t *testing.T) {
	httpAddr, grpcAddr := start(t, newServer(t, Config{Sink: &rejecting{}}))
	body := exportBody(t, stubs(3, 30))
	for _, ct := range []string{ctProtobuf, ctJSON} {
		b := body
		if ct == ctJSON {
			req := &coltracepb.ExportTraceServiceRequest{}
			if err := proto.Unmarshal(body, req); err != nil {
				t.Fatal(err)
			}
			b = []byte(strings.ReplaceAll(protojsonHex(t, req), "\n", ""))
		}
		resp, out := post(t, "http://"+httpAddr+"/v1/traces", ct, "", b, nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ct {
			t.Fatalf("%s: %s %s", ct, resp.Status, resp.Header.Get("Content-Type"))
		}
		got := &coltracepb.ExportTraceServiceResponse{}
		if ct == ctJSON {
			err := protojson.Unmarshal(out, got)
			if err != nil {
				t.Fatal(err)
			}
		} else if err := proto.Unmarshal(out, got); err != nil {
			t.Fatal(err)
		}
		ps := got.GetPartialSuccess()
		if ps.GetRejectedSpans() != 15 {
			t.Errorf("%s: rejected_spans = %d, want 15", ct, ps.GetRejectedSpans())
		}
		for _, want := range []string{"rejected 15 spans", "span 03030303030303030303030303030303/0300000000000001: attribute gen_ai.input.messages is 1 MiB", "is 29 MiB"} {
			if !strings.Contains(ps.GetErrorMessage(), want) {
				t.Errorf("%s: error_message %q lacks %q", ct, ps.GetErrorMessage(), want)
			}
		}
	}
	// The SDK's exporters read partial_success in every encoding: they
	// report it (to the OTel error handler) and do not retry it.
	srv := newServer(t, Config{Sink: &rejecting{}})
	httpAddr, grpcAddr = start(t, srv)
	exps := exporters(t, httpAddr, grpcAddr, nil)
	for name, exp := range exps {
		err := exp.ExportSpans(context.Background(), stubs(4, 4).Snapshots())
		if err == nil || !strings.Contains(err.Error(), "OTLP partial success") || !strings.Contains(err.Error(), "span 04040404040404040404040404040404/0400000000000003: attribute gen_ai.input.messages is 3 MiB") {
			t.Errorf("%s: export answered %v, want the SDK's partial success with each reason", name, err)
		}
	}
	if st := srv.Stats(); st.Requests != int64(len(exps)) || st.RejectedSpans != 2*int64(len(exps)) || st.Spans != 2*int64(len(exps)) {
		t.Errorf("stats = %+v, want one request per exporter (no retry), 2 accepted and 2 rejected each", st)
	}
}

// protojsonHex is req as OTLP JSON (hex ids), as an exporter writes it.
func protojsonHex(t *testing.T, req *coltracepb.ExportTraceServiceRequest) string {
	t.Helper()
	var spans []string
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				spans = append(spans, fmt.Sprintf(`{"traceId":%q,"spanId":%q,"name":%q,"startTimeUnixNano":"%d","endTimeUnixNano":"%d"}`,
					hex.EncodeToString(sp.TraceId), hex.EncodeToString(sp.SpanId), sp.Name, sp.StartTimeUnixNano, sp.EndTimeUnixNano))
			}
		}
	}
	return `{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.Join(spans, ",") + `]}]}]}`
}

// gate is a Sink that holds every call until released, and fails the
// first fails calls.
type gate struct {
	Memory
	mu      sync.Mutex
	fails   int
	busy    bool // fail with ErrBusy, not a plain error
	held    chan struct{}
	release chan struct{}
}

func (g *gate) Traces(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (otelsession.Result, error) {
	if g.held != nil {
		g.held <- struct{}{}
		<-g.release
	}
	g.mu.Lock()
	fail := g.fails > 0
	g.fails--
	g.mu.Unlock()
	if fail {
		if g.busy {
			return otelsession.Result{}, fmt.Errorf("200000 spans pending: %w", ErrBusy)
		}
		return otelsession.Result{}, errors.New("disk full")
	}
	return g.Memory.Traces(ctx, req)
}

func (g *gate) Logs(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (otelsession.Result, error) {
	return g.Memory.Logs(ctx, req)
}

func TestBackPressure(t *testing.T) {
	body := exportBody(t, stubs(5, 100))
	g := &gate{held: make(chan struct{}), release: make(chan struct{})}
	// Room for one request in flight, not two.
	cost, err := otelsession.DecodeCost(otelsession.SignalTraces, body)
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, Config{Sink: g, MaxInflightBytes: (int64(len(body)) + cost) * 3 / 2, RetryAfter: 2 * time.Second})
	httpAddr, grpcAddr := start(t, srv)
	done := make(chan int)
	go func() {
		resp, _ := post(t, "http://"+httpAddr+"/v1/traces", ctProtobuf, "", body, nil)
		done <- resp.StatusCode
	}()
	<-g.held
	resp, out := post(t, "http://"+httpAddr+"/v1/traces", ctProtobuf, "", body, nil)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("second export while the first is in flight: %s Retry-After %q: %s; want 429 with Retry-After 2", resp.Status, resp.Header.Get("Retry-After"), out)
	}
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		t.Fatal(err)
	}
	_, err = coltracepb.NewTraceServiceClient(conn).Export(context.Background(), req)
	st := status.Convert(err)
	var delay time.Duration
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			delay = ri.RetryDelay.AsDuration()
		}
	}
	if st.Code() != codes.ResourceExhausted || delay != 2*time.Second {
		t.Errorf("gRPC export while busy: %v, RetryInfo %v; want RESOURCE_EXHAUSTED with RetryInfo 2s", st, delay)
	}
	close(g.release)
	if code := <-done; code != 200 {
		t.Errorf("first export: %d, want 200", code)
	}
	if s := srv.Stats(); s.Throttled != 2 || s.InflightBytes != 0 || s.Spans != 100 {
		t.Errorf("stats = %+v, want 2 throttled, 100 spans, nothing left in flight", s)
	}
	// Free again: the same export goes through.
	g.held = nil
	if resp, _ := post(t, "http://"+httpAddr+"/v1/traces", ctProtobuf, "", body, nil); resp.StatusCode != 200 {
		t.Errorf("after the first finished: %s, want 200", resp.Status)
	}
}

// A Sink error is not an acknowledgement: the exporter retries, and the
// spans land once.
func TestSinkErrorRetried(t *testing.T) {
	for name := range map[string]bool{"http/protobuf": true, "grpc": true} {
		t.Run(name, func(t *testing.T) {
			g := &gate{fails: 2}
			srv := newServer(t, Config{Sink: g, RetryAfter: 10 * time.Millisecond})
			httpAddr, grpcAddr := start(t, srv)
			exp := exporters(t, httpAddr, grpcAddr, nil)[name]
			ss := stubs(9, 10)
			if err := exp.ExportSpans(context.Background(), ss.Snapshots()); err != nil {
				t.Fatalf("export after two sink failures: %v", err)
			}
			for _, s := range ss {
				if n := g.Deliveries(key(s)); n != 1 {
					t.Errorf("span %s stored %d times, want 1", key(s), n)
				}
			}
			if s := srv.Stats(); s.SinkErrors != 2 || s.Spans != 10 {
				t.Errorf("stats = %+v, want 2 sink errors and 10 spans", s)
			}
		})
	}
	// Over HTTP it is a 503 with Retry-After.
	srv := newServer(t, Config{Sink: &gate{fails: 1}})
	httpAddr, _ := start(t, srv)
	resp, out := post(t, "http://"+httpAddr+"/v1/traces", ctProtobuf, "", exportBody(t, stubs(9, 1)), nil)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(out), "disk full") {
		t.Errorf("sink failure: %s Retry-After %q %q, want 503, Retry-After 1 and the cause", resp.Status, resp.Header.Get("Retry-After"), out)
	}
}

func TestGRPCOversized(t *testing.T) {
	mem := &Memory{}
	_, grpcAddr := start(t, newServer(t, Config{Sink: mem, MaxRequestBytes: 4 << 10, MaxDecodedBytes: 4 << 10}))
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(exportBody(t, stubs(11, 200)), req); err != nil {
		t.Fatal(err)
	}
	for _, comp := range []string{"", "gzip"} {
		var opts []grpc.CallOption
		if comp != "" {
			opts = append(opts, grpc.UseCompressor(comp))
		}
		_, err = coltracepb.NewTraceServiceClient(conn).Export(metadata.NewOutgoingContext(context.Background(), nil), req, opts...)
		st := status.Convert(err)
		if st.Code() != codes.ResourceExhausted || len(st.Details()) != 0 {
			t.Errorf("oversized gRPC export (%q): %v %v, want RESOURCE_EXHAUSTED without RetryInfo (not retryable)", comp, st.Code(), st.Details())
		}
	}
	if len(mem.Spans()) != 0 {
		t.Errorf("%d spans stored, want none", len(mem.Spans()))
	}
}

// A busy Sink pushes back: 429 and RESOURCE_EXHAUSTED with RetryInfo,
// which the SDK's exporters retry until the spans land, once.
func TestSinkBusy(t *testing.T) {
	g := &gate{fails: 1, busy: true}
	srv := newServer(t, Config{Sink: g, RetryAfter: time.Second})
	httpAddr, grpcAddr := start(t, srv)
	resp, out := post(t, "http://"+httpAddr+"/v1/traces", ctProtobuf, "", exportBody(t, stubs(12, 1)), nil)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("busy sink over HTTP: %s Retry-After %q %s, want 429 with Retry-After", resp.Status, resp.Header.Get("Retry-After"), out)
	}
	for name, exp := range exporters(t, httpAddr, grpcAddr, nil) {
		if name != "http/protobuf" && name != "grpc" {
			continue
		}
		g.mu.Lock()
		g.fails = 1
		g.mu.Unlock()
		ss := stubs(13, 5)
		if name == "grpc" {
			ss = stubs(14, 5)
		}
		if err := exp.ExportSpans(context.Background(), ss.Snapshots()); err != nil {
			t.Fatalf("%s: export to a sink busy once: %v", name, err)
		}
		for _, s := range ss {
			if n := g.Deliveries(key(s)); n != 1 {
				t.Errorf("%s: span %s stored %d times, want 1", name, key(s), n)
			}
		}
	}
	if st := srv.Stats(); st.Throttled != 3 || st.SinkErrors != 0 {
		t.Errorf("stats = %+v, want 3 throttled, no sink errors", st)
	}
}
