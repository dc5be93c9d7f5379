package cli_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/recorder/otlp/jaegertest"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv"
	"github.com/agentctl/agentctl/internal/testenv/logcheck"
)

// collector is `agentctl collect` running as its own process (the test
// binary as agentctl, with main's signal handling).
type collector struct {
	cmd        *exec.Cmd
	http, grpc string
	out        *bufio.Reader
	stderr     *testenv.Buffer
	exited     chan error
}

func startCollector(t *testing.T, home string, args ...string) *collector {
	t.Helper()
	full := append([]string{"--home", home, "collect", "--json", "--listen", "127.0.0.1:0", "--grpc", "127.0.0.1:0"}, args...)
	cmd := exec.Command("agentctl", full...)
	c := &collector{cmd: cmd, stderr: &testenv.Buffer{}, exited: make(chan error, 1)}
	cmd.Stderr = c.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.out = bufio.NewReader(stdout)
	line, err := c.out.ReadBytes('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("agentctl %s: no listening line: %v\nstderr: %s", strings.Join(full, " "), err, c.stderr.String())
	}
	var l struct{ Kind, HTTP, GRPC string }
	if err := json.Unmarshal(line, &l); err != nil || l.Kind != "listening" {
		t.Fatalf("first line %q: %v", line, err)
	}
	c.http, c.grpc = "http://"+l.HTTP, l.GRPC
	go func() { c.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-c.exited
	})
	return c
}

// stop sends SIGTERM and returns the summary line; collect must exit 0.
func (c *collector) stop(t *testing.T) map[string]any {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(c.out)
	select {
	case err := <-c.exited:
		c.exited <- err
		if err != nil {
			t.Fatalf("agentctl collect after SIGTERM: %v\nstderr: %s", err, c.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("agentctl collect did not exit 60s after SIGTERM\nstderr: %s", c.stderr.String())
	}
	var sum map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(rest), &sum); err != nil || sum["kind"] != "finished" {
		t.Fatalf("summary %q: %v", rest, err)
	}
	return sum
}

func kv(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// conversation is one trace of n GenAI chat spans, each call's input the
// previous turns plus one, as an instrumented app exports them (OTel
// GenAI conventions, content on the span).
func conversation(seed uint64, n int) *coltracepb.ExportTraceServiceRequest {
	tid := make([]byte, 16)
	binary.BigEndian.PutUint64(tid, 0xc011ec7)
	binary.BigEndian.PutUint64(tid[8:], seed)
	t0 := uint64(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC).UnixNano()) + seed*uint64(time.Minute)
	var spans []*tracepb.Span
	var msgs []string
	for i := range n {
		sid := make([]byte, 8)
		binary.BigEndian.PutUint64(sid, seed<<16|uint64(i)+1)
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","parts":[{"type":"text","content":"question %d of conversation %d"}]}`, i, seed))
		in := "[" + strings.Join(msgs, ",") + "]"
		answer := fmt.Sprintf(`{"role":"assistant","parts":[{"type":"text","content":"answer %d of conversation %d"}],"finish_reason":"stop"}`, i, seed)
		msgs = append(msgs, answer)
		start := t0 + uint64(i)*uint64(time.Second)
		spans = append(spans, &tracepb.Span{TraceId: tid, SpanId: sid, Name: "chat gpt-4o-mini", Kind: tracepb.Span_SPAN_KIND_CLIENT,
			StartTimeUnixNano: start, EndTimeUnixNano: start + uint64(300*time.Millisecond),
			Attributes: []*commonpb.KeyValue{kv("gen_ai.operation.name", "chat"), kv("gen_ai.provider.name", "openai"),
				kv("gen_ai.request.model", "gpt-4o-mini"), kv("gen_ai.input.messages", in), kv("gen_ai.output.messages", "["+answer+"]")}})
	}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", "collect-test")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "collect-test"}, Spans: spans}}}}}
}

func spanKeys(req *coltracepb.ExportTraceServiceRequest) []string {
	var out []string
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				out = append(out, hex.EncodeToString(sp.TraceId)+"/"+hex.EncodeToString(sp.SpanId))
			}
		}
	}
	return out
}

// postTraces sends req as OTLP/HTTP protobuf and returns the status (0
// when the request did not get an answer).
func postTraces(url string, req *coltracepb.ExportTraceServiceRequest) (int, error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return 0, err
	}
	resp, err := http.Post(url+"/v1/traces", "application/x-protobuf", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// modelCalls counts, per "trace/span", the model_call events of every
// session in home that came from that span.
func modelCalls(t *testing.T, home string) map[string]int {
	t.Helper()
	st := recorder.Store{Root: home}
	ids, err := st.IDs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, id := range ids {
		evs, _, err := st.Load(id)
		if errors.Is(err, recorder.ErrNotStarted) {
			continue // a session collect is creating now: its folder is there, its log not yet
		}
		if err != nil {
			t.Fatalf("load %s: %v", id, err)
		}
		for _, e := range evs {
			if e.Kind != session.KindModelCall {
				continue
			}
			var a struct {
				TraceID string `json:"trace_id"`
				SpanID  string `json:"span_id"`
			}
			json.Unmarshal(e.Attrs, &a)
			out[a.TraceID+"/"+a.SpanID]++
		}
	}
	return out
}

// Killed with SIGKILL mid-stream: every span acknowledged before the
// kill is in a session after a restart; the export that was in flight
// (unacknowledged), retried by its exporter against the restarted
// collector, lands once; a retry of acknowledged exports adds nothing.
func TestCollectKill9(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	c := startCollector(t, home)
	var (
		mu      sync.Mutex
		acked   []*coltracepb.ExportTraceServiceRequest
		unacked []*coltracepb.ExportTraceServiceRequest
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(0); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req := conversation(uint64(w)<<20|i+1, 5)
				code, err := postTraces(c.http, req)
				mu.Lock()
				if err == nil && code == 200 {
					acked = append(acked, req)
				} else {
					unacked = append(unacked, req)
				}
				mu.Unlock()
				if err != nil {
					return // the collector is gone
				}
			}
		}()
	}
	// Let some exports be acknowledged, then kill it mid-stream.
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 30 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	wg.Wait()
	close(stop)
	if len(acked) == 0 {
		t.Fatalf("no export acknowledged before the kill; stderr: %s", c.stderr.String())
	}
	t.Logf("%d exports acknowledged, %d unanswered at the kill", len(acked), len(unacked))

	// Restarted on the same home: the exporters retry what was not
	// answered, and (as an exporter whose ack was lost would) what was.
	c = startCollector(t, home)
	for _, req := range append(append([]*coltracepb.ExportTraceServiceRequest(nil), unacked...), acked...) {
		if code, err := postTraces(c.http, req); err != nil || code != 200 {
			t.Fatalf("retry after restart: %d %v", code, err)
		}
	}
	c.stop(t)

	got := modelCalls(t, home)
	for _, req := range append(acked, unacked...) {
		for _, k := range spanKeys(req) {
			if got[k] != 1 {
				t.Errorf("span %s: %d model_call events, want 1", k, got[k])
			}
		}
	}
	if err := logcheck.Home(recorder.Store{Root: home}); err != nil {
		t.Error(err)
	}
}

// Exports in any order and twice: a conversation's calls are one session
// in conversation order, each once; the SDK-less protobuf client stands
// for a retrying exporter.
func TestCollectDuplicateOutOfOrder(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	c := startCollector(t, home)
	req := conversation(77, 6)
	spans := req.ResourceSpans[0].ScopeSpans[0].Spans
	// Later calls first, one span a request, then all again.
	for i := len(spans) - 1; i >= 0; i-- {
		one := proto.Clone(req).(*coltracepb.ExportTraceServiceRequest)
		one.ResourceSpans[0].ScopeSpans[0].Spans = []*tracepb.Span{spans[i]}
		if code, err := postTraces(c.http, one); err != nil || code != 200 {
			t.Fatalf("export span %d: %d %v", i, code, err)
		}
	}
	if code, err := postTraces(c.http, req); err != nil || code != 200 {
		t.Fatalf("export again: %d %v", code, err)
	}
	sum := c.stop(t)
	if sum["sessions"] != float64(1) {
		t.Errorf("summary %v, want 1 session", sum)
	}
	st := recorder.Store{Root: home}
	ids, _ := st.IDs()
	if len(ids) != 1 {
		t.Fatalf("sessions %v, want 1", ids)
	}
	evs, _, err := st.Load(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range evs {
		if e.Kind == session.KindModelCall {
			var a struct {
				SpanID string `json:"span_id"`
			}
			json.Unmarshal(e.Attrs, &a)
			order = append(order, a.SpanID)
		}
	}
	var want []string
	for _, sp := range spans {
		want = append(want, hex.EncodeToString(sp.SpanId))
	}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("model calls by span = %v, want each once in conversation order %v", order, want)
	}
}

// Off loopback the collector needs its token, and checks it.
func TestCollectToken(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	cmd := exec.Command("agentctl", "--home", home, "collect", "--listen", "0.0.0.0:0", "--grpc", "off")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "--listen 0.0.0.0:0 is not loopback: give --token") {
		t.Fatalf("collect off loopback without a token: %v %s", err, out)
	}
	c := startCollector(t, home, "--listen", "0.0.0.0:0", "--token", "s3cret")
	url := strings.Replace(c.http, "0.0.0.0", "127.0.0.1", 1)
	b, _ := proto.Marshal(conversation(5, 1))
	for _, tc := range []struct {
		auth string
		code int
	}{{"", 401}, {"Bearer nope", 401}, {"Bearer s3cret", 200}} {
		req, _ := http.NewRequestWithContext(context.Background(), "POST", url+"/v1/traces", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/x-protobuf")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("Authorization %q: %s, want %d", tc.auth, resp.Status, tc.code)
		}
	}
	sum := c.stop(t)
	if st, _ := sum["stats"].(map[string]any); st["spans"] != float64(1) || st["invalid"] != float64(2) {
		t.Errorf("summary %v, want 1 span and 2 refused", sum)
	}
}

// The npm emitters' real exports (testdata/otel), replayed into the
// collect process over the protocol each was captured with: every
// emitter's conversation becomes one session whose model calls are the
// calls the model server answered, and whose final answer is its answer.
func TestCollectCaptures(t *testing.T) {
	root := filepath.Join(testenv.Root(), "testdata", "otel")
	emitters, _ := filepath.Glob(filepath.Join(root, "*", "http-protobuf"))
	if len(emitters) < 5 {
		t.Fatalf("captures under %s: %d emitters, want 5", root, len(emitters))
	}
	for _, protocol := range []string{"http-protobuf", "http-json", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			c := startCollector(t, home)
			want := map[string]int{} // final answer text → model calls
			for _, em := range emitters {
				dir := filepath.Join(filepath.Dir(em), protocol)
				truth := testenv.ReadJSONL(t, filepath.Join(dir, "model-server.jsonl"))
				calls, final := 0, ""
				for _, e := range truth {
					switch e.Kind {
					case session.KindModelCall:
						calls++
					case session.KindAssistantMessage:
						if e.Text != "" {
							final = e.Text
						}
					}
				}
				want[final] += calls
				files, _ := filepath.Glob(filepath.Join(dir, "[0-9][0-9][0-9]-*"))
				sort.Strings(files)
				for _, f := range files {
					if err := sendCapture(c, protocol, f); err != nil {
						t.Fatalf("%s: %v", strings.TrimPrefix(f, root+"/"), err)
					}
				}
			}
			sum := c.stop(t)
			if sum["sessions"] != float64(len(emitters)) {
				t.Errorf("summary %v, want %d sessions (one per emitter's conversation)", sum, len(emitters))
			}
			st := recorder.Store{Root: home}
			ids, _ := st.IDs()
			got := map[string]int{}
			for _, id := range ids {
				evs, _, err := st.Load(id)
				if err != nil {
					t.Fatal(err)
				}
				calls, final := 0, ""
				for _, e := range evs {
					switch e.Kind {
					case session.KindModelCall:
						calls++
					case session.KindAssistantMessage:
						if e.Text != "" {
							final = e.Text
						}
					}
				}
				got[final] += calls
			}
			for text, n := range want {
				if got[text] != n {
					t.Errorf("sessions ending %q: %d model calls, want %d (all: %v)", text, got[text], n, got)
				}
			}
			if err := logcheck.Home(st); err != nil {
				t.Error(err)
			}
		})
	}
}

// sendCapture sends one captured export as it was first sent.
func sendCapture(c *collector, protocol, path string) error {
	body, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sig := "/v1/logs"
	if strings.Contains(filepath.Base(path), "-traces.") {
		sig = "/v1/traces"
	}
	if protocol == "grpc" {
		conn, err := grpc.NewClient(c.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer conn.Close()
		if sig == "/v1/traces" {
			req := &coltracepb.ExportTraceServiceRequest{}
			if err := proto.Unmarshal(body, req); err != nil {
				return err
			}
			_, err = coltracepb.NewTraceServiceClient(conn).Export(context.Background(), req)
			return err
		}
		req := &collogspb.ExportLogsServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			return err
		}
		_, err = collogspb.NewLogsServiceClient(conn).Export(context.Background(), req)
		return err
	}
	ct := "application/x-protobuf"
	if protocol == "http-json" {
		ct = "application/json"
	}
	resp, err := http.Post(c.http+sig, ct, bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != 200 {
		return fmt.Errorf("POST %s: %s: %s", sig, resp.Status, out)
	}
	return nil
}

// Hostile exports to the process: malformed, oversized and gzip-bomb
// requests are refused with an OTLP error and write nothing; a span bomb
// (more spans than a session may take, an attribute over the limit) is
// cut at the limits, the rest refused as partial_success with reasons.
func TestCollectBombs(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	c := startCollector(t, home, "--max-request-bytes", "262144", "--max-decoded-bytes", "1048576",
		"--max-spans-per-session", "40", "--max-attribute-bytes", "4096")
	var zeros bytes.Buffer
	zw := gzip.NewWriter(&zeros)
	zw.Write(make([]byte, 64<<20))
	zw.Close()
	for _, tc := range []struct {
		name string
		enc  string
		body []byte
		code int
	}{
		{"malformed", "", []byte("\x0a\xff\xff\xff\xff\x0f"), 400},
		{"oversized", "", make([]byte, 300<<10), 413},
		{"gzip bomb", "gzip", zeros.Bytes(), 413},
	} {
		req, _ := http.NewRequest("POST", c.http+"/v1/traces", bytes.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/x-protobuf")
		if tc.enc != "" {
			req.Header.Set("Content-Encoding", tc.enc)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %s %q, want %d", tc.name, resp.Status, out, tc.code)
		}
	}
	if ids, _ := (recorder.Store{Root: home}).IDs(); len(ids) != 0 {
		t.Errorf("refused requests wrote sessions %v", ids)
	}

	// A span bomb: 200 calls in one conversation, one with a 64 KiB
	// attribute.
	bomb := conversation(999, 1)
	one := bomb.ResourceSpans[0].ScopeSpans[0].Spans[0]
	var sp []*tracepb.Span
	for i := range 200 {
		s := proto.Clone(one).(*tracepb.Span)
		binary.BigEndian.PutUint64(s.SpanId, 999<<16|uint64(i)+1)
		s.StartTimeUnixNano += uint64(i) * uint64(time.Second)
		s.EndTimeUnixNano += uint64(i) * uint64(time.Second)
		sp = append(sp, s)
	}
	bomb.ResourceSpans[0].ScopeSpans[0].Spans = sp
	sp[3].Attributes = append(sp[3].Attributes, kv("gen_ai.system_instructions", strings.Repeat("x", 64<<10)))
	b, _ := proto.Marshal(bomb)
	resp, err := http.Post(c.http+"/v1/traces", "application/x-protobuf", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := &coltracepb.ExportTraceServiceResponse{}
	if resp.StatusCode != 200 || proto.Unmarshal(out, got) != nil {
		t.Fatalf("span bomb: %s %q, want 200 with a partial success", resp.Status, out)
	}
	ps := got.GetPartialSuccess()
	if ps.GetRejectedSpans() != 160 || !strings.Contains(ps.GetErrorMessage(), "/0000000003e70004: attribute gen_ai.system_instructions is 64 KiB, over the 4 KiB limit") ||
		!strings.Contains(ps.GetErrorMessage(), "/0000000003e7002a and 158 more: trace 000000000c011ec700000000000003e7 already has 40 spans") || len(ps.GetErrorMessage()) > 1000 {
		t.Errorf("span bomb: partial_success %d %q, want 160 rejected (1 over the attribute limit, 159 over 40 a session), each reason once", ps.GetRejectedSpans(), ps.GetErrorMessage())
	}
	c.stop(t)
	calls := modelCalls(t, home)
	if len(calls) != 40 {
		t.Errorf("the bomb's session has %d model calls, want the 40 a session may take", len(calls))
	}
}

// The Go OTel SDK's own exporters (HTTP protobuf, HTTP JSON, gRPC) into
// the collect process, which forwards every export to a real Jaeger: the
// spans are sessions here and traces there.
func TestCollectSDKExportersAndForward(t *testing.T) {
	j := jaegertest.Start(t)
	home := filepath.Join(t.TempDir(), "home")
	c := startCollector(t, home, "--forward", "http://"+j.HTTP)
	ctx := context.Background()
	httpHost := strings.TrimPrefix(c.http, "http://")
	mk := map[string]func() (sdktrace.SpanExporter, error){
		"http/protobuf": func() (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(httpHost), otlptracehttp.WithInsecure(), otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		},
		"http/json": func() (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(httpHost), otlptracehttp.WithInsecure(), otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
		},
		"grpc": func() (sdktrace.SpanExporter, error) {
			return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(c.grpc), otlptracegrpc.WithInsecure())
		},
	}
	var traces []string
	for name, f := range mk {
		exp, err := f()
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "sdk-"+strings.ReplaceAll(name, "/", "-")))))
		tr := tp.Tracer("collect-test")
		rctx, root := tr.Start(ctx, "invoke_agent support", oteltrace.WithAttributes(attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", "support")))
		for i := range 3 {
			_, sp := tr.Start(rctx, "chat gpt-4o-mini", oteltrace.WithSpanKind(oteltrace.SpanKindClient), oteltrace.WithAttributes(
				attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", "openai"), attribute.String("gen_ai.request.model", "gpt-4o-mini"),
				attribute.String("gen_ai.input.messages", fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":"question %d via %s"}]}]`, i, name)),
				attribute.String("gen_ai.output.messages", fmt.Sprintf(`[{"role":"assistant","parts":[{"type":"text","content":"answer %d"}],"finish_reason":"stop"}]`, i)),
				attribute.Int("gen_ai.usage.input_tokens", 10+i), attribute.Int("gen_ai.usage.output_tokens", 3)))
			sp.End()
		}
		root.End()
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		traces = append(traces, root.SpanContext().TraceID().String())
	}
	sum := c.stop(t)
	if st, _ := sum["stats"].(map[string]any); st["spans"] != float64(12) {
		t.Errorf("summary %v, want 12 spans", sum)
	}
	if fw, _ := sum["forward"].(map[string]any); fw["sent"] != float64(12) || fw["failed"] != float64(0) {
		t.Errorf("summary %v, want 12 exports forwarded (one a span: WithSyncer)", sum)
	}
	calls := modelCalls(t, home)
	n := 0
	for k := range calls {
		for _, tid := range traces {
			if strings.HasPrefix(k, tid+"/") {
				n++
			}
		}
	}
	if n != 9 {
		t.Errorf("%d model calls from the SDK's traces, want 9 (%v)", n, calls)
	}
	for _, tid := range traces {
		if spans := j.WaitTrace(t, tid, 4); len(spans) != 4 {
			t.Errorf("Jaeger has %d spans of trace %s, want 4", len(spans), tid)
		}
	}
}

// A production session is live while collect writes it: `sessions` shows
// it running, `show --follow` prints the spans of later exports as their
// trace is written, and ends when collect stops and lets the session go,
// which then reads as imported.
func TestCollectLiveSession(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	c := startCollector(t, home)
	req := conversation(88, 6)
	spans := req.ResourceSpans[0].ScopeSpans[0].Spans
	part := func(from, to int) *coltracepb.ExportTraceServiceRequest {
		p := proto.Clone(req).(*coltracepb.ExportTraceServiceRequest)
		p.ResourceSpans[0].ScopeSpans[0].Spans = spans[from:to]
		return p
	}
	if code, err := postTraces(c.http, part(0, 3)); err != nil || code != 200 {
		t.Fatalf("export: %d %v", code, err)
	}
	status := func() (string, string) {
		out, err := exec.Command("agentctl", "--home", home, "sessions", "--json").Output()
		if err != nil {
			t.Fatalf("sessions: %v", err)
		}
		var list []struct {
			SessionID string `json:"session_id"`
			Status    string `json:"status"`
		}
		json.Unmarshal(out, &list)
		if len(list) != 1 {
			return "", ""
		}
		return list[0].SessionID, list[0].Status
	}
	var id, st string
	// (Each look is a DuckDB query of its own: not too often.)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && st == ""; time.Sleep(500 * time.Millisecond) {
		id, st = status()
	}
	if st != "running" {
		t.Fatalf("while collect writes it the session is %q, want running", st)
	}
	follow := exec.Command("agentctl", "--home", home, "show", id, "--follow")
	out, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	calls := 0
	await := func(n int) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for calls < n {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("show --follow ended after %d model calls, want %d", calls, n)
				}
				if strings.Contains(l, "model_call") {
					calls++
				}
			case <-timeout:
				t.Fatalf("show --follow printed %d model calls, want %d", calls, n)
			}
		}
	}
	await(3)
	if code, err := postTraces(c.http, part(3, 6)); err != nil || code != 200 {
		t.Fatalf("export: %d %v", code, err)
	}
	await(6)
	c.stop(t)
	ended := make(chan error, 1)
	go func() {
		for range lines {
		}
		ended <- follow.Wait()
	}()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("show --follow after collect stopped: %v", err)
		}
	case <-time.After(10 * time.Second):
		follow.Process.Kill()
		t.Fatal("show --follow did not end when collect let the session go")
	}
	if _, st := status(); st != "imported" {
		t.Errorf("after collect stopped the session is %q, want imported", st)
	}
}

// SIGTERM while an export is still arriving: collect stops taking new
// ones, answers that one 200 once its spans are durable, writes them into
// the session and exits 0.
func TestCollectDrainsOnSIGTERM(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	c := startCollector(t, home)
	req := conversation(99, 4)
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	hr, err := http.NewRequest(http.MethodPost, c.http+"/v1/traces", pr)
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Content-Type", "application/x-protobuf")
	hr.ContentLength = int64(len(body))
	answered := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			answered <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	half := len(body) / 2
	if _, err := pw.Write(body[:half]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the request is in flight
	c.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond) // collect is draining
	if _, err := pw.Write(body[half:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	select {
	case code := <-answered:
		if code != 200 {
			t.Fatalf("the export in flight at SIGTERM was answered %d, want 200", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the export in flight at SIGTERM got no answer")
	}
	sum := c.stop(t) // already signalled: collects the summary and the exit
	if st, _ := sum["stats"].(map[string]any); st["spans"] != float64(4) {
		t.Errorf("summary %v, want the 4 spans of the drained export", sum)
	}
	if calls := modelCalls(t, home); len(calls) != 4 {
		t.Errorf("model calls %v, want the drained export's 4 in the session", calls)
	}
}

// A trace for a session another process holds (its lease) is set aside
// while collect writes the others, said on stderr, and written once the
// lease is released; SIGTERM then exits 0 with every span once.
func TestCollectSetsAsideHeldSession(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	c := startCollector(t, home)
	if code, err := postTraces(c.http, conversation(201, 2)); code != 200 {
		t.Fatalf("export: %d %v", code, err)
	}
	c.stop(t)
	st := recorder.Store{Root: home}
	ids, err := st.IDs()
	if err != nil || len(ids) != 1 {
		t.Fatalf("sessions %v (%v), want one", ids, err)
	}
	lease, err := recorder.AcquireLease(st.SessionDir(ids[0]))
	if err != nil {
		t.Fatal(err)
	}
	c = startCollector(t, home)
	held, other := conversation(201, 4), conversation(202, 2)
	for _, req := range []*coltracepb.ExportTraceServiceRequest{held, other} {
		if code, err := postTraces(c.http, req); code != 200 {
			t.Fatalf("export while a session is held: %d %v; want 200", code, err)
		}
	}
	landed := func(req *coltracepb.ExportTraceServiceRequest) bool {
		got := modelCalls(t, home)
		for _, k := range spanKeys(req) {
			if got[k] != 1 {
				return false
			}
		}
		return true
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(40 * time.Second); !ok(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 40s\nstderr: %s", what, c.stderr.String())
			}
		}
	}
	wait("the other conversation written beside the held session", func() bool { return landed(other) })
	wait("stderr says a trace was set aside", func() bool { return strings.Contains(c.stderr.String(), "set aside") })
	if landed(held) {
		t.Fatalf("the held session was written into")
	}
	lease.Release()
	wait("the held conversation written once its lease is released", func() bool { return landed(held) })
	c.stop(t)
	if !landed(held) || !landed(other) {
		t.Errorf("after SIGTERM: a span is not in a session exactly once")
	}
}
