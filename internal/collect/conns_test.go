package collect

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/otelsession"
)

// serve runs srv as collect does (HTTPServer on Listener, GRPC on
// GRPCListener) until the test ends.
func serve(t *testing.T, srv *Server) (httpAddr, grpcAddr string) {
	t.Helper()
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer()
	go hs.Serve(srv.Listener(hl))
	t.Cleanup(func() { hs.Close() })
	g := srv.GRPC()
	go g.Serve(srv.GRPCListener(gl, hl.Addr().String()))
	t.Cleanup(g.Stop)
	return hl.Addr().String(), gl.Addr().String()
}

func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Uploads that stall after their headers, or trickle, are cut and their
// share of the in-flight budget released, so they cannot starve the
// exporters that send.
func TestStalledUploadsCut(t *testing.T) {
	body := exportBody(t, stubs(30, 10))
	srv := newServer(t, Config{Sink: &Memory{}, MaxInflightBytes: 3 << 20, StallTimeout: 300 * time.Millisecond, ReadTimeout: 1500 * time.Millisecond})
	httpAddr, _ := serve(t, srv)
	for _, tc := range []struct {
		name  string
		every time.Duration // a byte this often after the first 10 (0: none)
	}{
		{"stalled", 0},
		{"trickling", 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", httpAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// 1 MiB announced: a third of the budget each.
			fmt.Fprintf(c, "POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\nContent-Length: %d\r\n\r\n", 1<<20)
			c.Write(make([]byte, 10))
			waitFor(t, 2*time.Second, "the upload reserved its bytes", func() bool { return srv.Stats().InflightBytes > 0 })
			stop := make(chan struct{})
			defer close(stop)
			if tc.every > 0 {
				go func() {
					for {
						select {
						case <-stop:
							return
						case <-time.After(tc.every):
							c.Write([]byte{0})
						}
					}
				}()
			}
			began := time.Now()
			waitFor(t, 5*time.Second, "the stalled upload's budget released", func() bool { return srv.Stats().InflightBytes == 0 })
			if d := time.Since(began); d > 3*time.Second {
				t.Errorf("cut after %s, want within the read timeout", d)
			}
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != http.StatusRequestTimeout {
				t.Errorf("answer to the stalled upload: %v %v, want 408", resp, err)
			}
			// The budget is there for an exporter that sends.
			if resp, out := post(t, "http://"+httpAddr+"/v1/traces", ctProtobuf, "", body, nil); resp.StatusCode != 200 {
				t.Errorf("export after the stalled one was cut: %s %s", resp.Status, out)
			}
		})
	}
}

// Connections that carry nothing are closed: a gRPC one that never
// speaks, one idle after a call (GOAWAY: the client goes idle), an HTTP
// keep-alive one.
func TestIdleConnectionsClosed(t *testing.T) {
	srv := newServer(t, Config{Sink: &Memory{}, IdleTimeout: 300 * time.Millisecond, ReadTimeout: 500 * time.Millisecond})
	httpAddr, grpcAddr := serve(t, srv)
	for name, addr := range map[string]string{"gRPC silent": grpcAddr, "HTTP silent": httpAddr} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		began := time.Now()
		_, err = io.Copy(io.Discard, c)
		if err != nil || time.Since(began) > 3*time.Second {
			t.Errorf("%s connection: closed after %s (%v), want closed by the server within the timeout", name, time.Since(began), err)
		}
	}
	// The client's connection is watched from below: the server closing
	// it shows as the end of its reads. (The client's own state is no
	// witness: on a loaded runner it may already have left READY by the
	// time it is asked.)
	closed := make(chan struct{})
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &closeWatch{Conn: c, closed: closed}, nil
	}
	conn, err := grpc.NewClient("passthrough:///"+grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(exportBody(t, stubs(31, 2)), req); err != nil {
		t.Fatal(err)
	}
	if _, err := coltracepb.NewTraceServiceClient(conn).Export(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("gRPC connection idle past IdleTimeout still open 5s after the call")
	}
}

// closeWatch closes closed once the first read fails: the peer closed
// the connection (or the client did, which the test does only at its end).
type closeWatch struct {
	net.Conn
	closed chan struct{}
	once   sync.Once
}

func (c *closeWatch) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.once.Do(func() { close(c.closed) })
	}
	return n, err
}

// Past MaxConns, a connection waits until one closes.
func TestConnectionCap(t *testing.T) {
	srv := newServer(t, Config{Sink: &Memory{}, MaxConns: 2})
	httpAddr, _ := serve(t, srv)
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		defer c.Close()
	}
	body := exportBody(t, stubs(32, 1))
	answered := make(chan int, 1)
	go func() {
		resp, err := http.Post("http://"+httpAddr+"/v1/traces", ctProtobuf, strings.NewReader(string(body)))
		if err != nil {
			answered <- -1
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	select {
	case code := <-answered:
		t.Fatalf("a third connection was served (%d) while 2 of MaxConns 2 were open", code)
	case <-time.After(300 * time.Millisecond):
	}
	held[0].Close()
	select {
	case code := <-answered:
		if code != 200 {
			t.Errorf("third connection once one closed: %d, want 200", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting connection was not served after one closed")
	}
}

// OTLP/HTTP sent to the gRPC port is answered 400 naming the HTTP port,
// and collect's log says so.
func TestHTTPToGRPCPort(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	srv := newServer(t, Config{Sink: &Memory{}, Logf: func(f string, a ...any) {
		mu.Lock()
		lines = append(lines, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	httpAddr, grpcAddr := serve(t, srv)
	for range 3 {
		resp, out := post(t, "http://"+grpcAddr+"/v1/traces", ctProtobuf, "", exportBody(t, stubs(33, 1)), nil)
		if resp.StatusCode != 400 || !strings.Contains(string(out), "http://"+httpAddr) {
			t.Errorf("OTLP/HTTP to the gRPC port: %s %q, want 400 naming http://%s", resp.Status, out, httpAddr)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 1 || !strings.Contains(lines[0], "gRPC port "+grpcAddr) || !strings.Contains(lines[0], "OTLP/HTTP goes to http://"+httpAddr) || !strings.Contains(lines[0], `"POST /v1/traces HTTP/1.1"`) {
		t.Errorf("log = %q, want one line naming the request, the gRPC port and the HTTP one", lines)
	}
}

// An export refused before its body is read (in-flight budget spent) is
// still read whole before the answer: an early answer and close is a
// broken pipe to an exporter still writing, which it reports instead of
// the 429.
func TestEarlyAnswerReadsBody(t *testing.T) {
	g := &gate{held: make(chan struct{}), release: make(chan struct{})}
	srv := newServer(t, Config{Sink: g, MaxInflightBytes: 6<<20 + 100}) // 6 MiB fits, not beside another export
	httpAddr, _ := serve(t, srv)
	small := exportBody(t, stubs(34, 100))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.Post("http://"+httpAddr+"/v1/traces", ctProtobuf, strings.NewReader(string(small))); err == nil {
			resp.Body.Close()
		}
	}()
	<-g.held // holds its budget
	defer func() { close(g.release); <-done }()
	c, err := net.Dial("tcp", httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := make([]byte, 6<<20)
	fmt.Fprintf(c, "POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\nContent-Length: %d\r\n\r\n", len(big))
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for off := 0; off < len(big); off += 64 << 10 {
		if _, err := c.Write(big[off : off+64<<10]); err != nil {
			t.Fatalf("writing the body at %d: %v (the server answered before reading it, and closed)", off, err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("answer: %v %v, want 429", resp, err)
	}
}

// TestOversizedAnswerReadsBody: an export a little over the request limit
// is answered 413 once its body is read (and not kept): closing on it
// while the exporter writes is a connection reset to the exporter, which
// retries the same batch instead of dropping it. One far over the limit
// (past drainFactor) is closed unread.
func TestOversizedAnswerReadsBody(t *testing.T) {
	const limit = 256 << 10
	httpAddr, _ := serve(t, newServer(t, Config{Sink: &Memory{}, MaxRequestBytes: limit}))
	c, err := net.Dial("tcp", httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := make([]byte, 2*limit)
	fmt.Fprintf(c, "POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\nContent-Length: %d\r\n\r\n", len(big))
	c.SetDeadline(time.Now().Add(10 * time.Second))
	time.Sleep(100 * time.Millisecond) // the answer is ready before the body comes
	for off := 0; off < len(big); off += 16 << 10 {
		if _, err := c.Write(big[off : off+16<<10]); err != nil {
			t.Fatalf("writing the body at %d: %v (the server answered before reading it, and closed)", off, err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("answer: %v %v, want 413", resp, err)
	}
}

// busyFor is a Sink's ErrBusy that says how long its backlog takes.
type busyFor time.Duration

func (b busyFor) Error() string             { return "busy" }
func (b busyFor) Is(target error) bool      { return target == ErrBusy }
func (b busyFor) RetryAfter() time.Duration { return time.Duration(b) }

type busySink struct{ Memory }

func (b *busySink) Traces(context.Context, *coltracepb.ExportTraceServiceRequest) (otelsession.Result, error) {
	return otelsession.Result{}, fmt.Errorf("ingester: %w", busyFor(7*time.Second))
}

// Retry-After (and gRPC's RetryInfo) is what the Sink's backlog takes,
// not a fixed second.
func TestRetryAfterFromBacklog(t *testing.T) {
	srv := newServer(t, Config{Sink: &busySink{}})
	httpAddr, grpcAddr := serve(t, srv)
	resp, out := post(t, "http://"+httpAddr+"/v1/traces", ctProtobuf, "", exportBody(t, stubs(35, 1)), nil)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || !strings.Contains(string(out), "retry after 7 s") {
		t.Errorf("busy sink: %s Retry-After %q %q, want 429 with Retry-After 7", resp.Status, resp.Header.Get("Retry-After"), out)
	}
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := &coltracepb.ExportTraceServiceRequest{}
	proto.Unmarshal(exportBody(t, stubs(35, 1)), req)
	_, err = coltracepb.NewTraceServiceClient(conn).Export(context.Background(), req)
	var delay time.Duration
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			delay = ri.RetryDelay.AsDuration()
		}
	}
	if delay != 7*time.Second {
		t.Errorf("gRPC RetryInfo %v, want 7s", delay)
	}
}

// The token holds on gRPC as on HTTP, through collect's listeners: a
// call without it is UNAUTHENTICATED and stores nothing.
func TestGRPCNeedsToken(t *testing.T) {
	mem := &Memory{}
	_, grpcAddr := serve(t, newServer(t, Config{Sink: mem, Token: "s3cret"}))
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := &coltracepb.ExportTraceServiceRequest{}
	proto.Unmarshal(exportBody(t, stubs(36, 2)), req)
	for _, tc := range []struct {
		md   []string
		want codes.Code
	}{
		{nil, codes.Unauthenticated},
		{[]string{"authorization", "Bearer wrong"}, codes.Unauthenticated},
		{[]string{"authorization", "Bearer s3cret"}, codes.OK},
	} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), tc.md...)
		_, err := coltracepb.NewTraceServiceClient(conn).Export(ctx, req)
		if status.Code(err) != tc.want {
			t.Errorf("export with metadata %q: %v, want %v", tc.md, err, tc.want)
		}
	}
	if n := len(mem.Spans()); n != 2 {
		t.Errorf("%d spans stored, want the 2 of the call with the token", n)
	}
}

// TestGRPCTokenBeforeMessage: a call without the token is refused when its
// headers come, before its message is read: a message over the size limit
// is answered UNAUTHENTICATED, not RESOURCE_EXHAUSTED (which would mean
// the collector read it, and would have counted and decoded one within
// the limit).
func TestGRPCTokenBeforeMessage(t *testing.T) {
	mem := &Memory{}
	body := exportBody(t, stubs(37, 50))
	_, grpcAddr := serve(t, newServer(t, Config{Sink: mem, Token: "s3cret", MaxRequestBytes: int64(len(body)) / 2, MaxDecodedBytes: int64(len(body)) / 2}))
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
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("an over-limit export without the token: %v, want UNAUTHENTICATED before the message is read", err)
	}
}
